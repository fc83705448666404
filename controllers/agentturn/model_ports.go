package agentturn

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// The loopback ports drill Pods' scripted models listen on
// (docs/drill.md#ports): below the kernel's ephemeral range (32768-60999)
// and the Service NodePort range (30000-32767), which a host-network Pod
// shares with the node.
const (
	drillPortFirst int32 = 20000
	drillPortCount int32 = 1000
	// drillPortHold keeps a port given to a turn from any other turn until
	// the cache has surely seen the turn's Pod (or its create failed long
	// ago).
	drillPortHold = 2 * time.Minute
)

// drillPorts picks drill Pods' ports, unique among the live drill Pods of
// the cluster: Pods on the host network share the node's loopback, and the
// node is not known before the scheduler picks it. Ports in use are read
// from the cached Pods' turnwatch.dev/drill-port label; a port handed out
// is held in memory until the cache shows its Pod, so that two turns
// started in the same instant do not take one port.
type drillPorts struct {
	mu   sync.Mutex
	held map[int32]portHold
}

type portHold struct {
	turn  types.UID
	until time.Time
}

// pick gives turn a free port: the one it was given before if its hold
// stands (a retried create), else the first free one from a place that
// depends on the turn, so that turns spread over the range.
func (d *drillPorts) pick(turn types.UID, inUse map[int32]bool, now time.Time) (int32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[int32]portHold{}
	}
	for p, h := range d.held {
		switch {
		case h.until.Before(now):
			delete(d.held, p)
		case h.turn == turn:
			h.until = now.Add(drillPortHold)
			d.held[p] = h
			return p, nil
		}
	}
	start := int32(hashUID(turn) % uint32(drillPortCount))
	for i := range drillPortCount {
		p := drillPortFirst + (start+i)%drillPortCount
		if _, taken := d.held[p]; taken || inUse[p] {
			continue
		}
		d.held[p] = portHold{turn: turn, until: now.Add(drillPortHold)}
		return p, nil
	}
	return 0, fmt.Errorf("all %d drill ports (%d-%d) are taken by live drill Pods", drillPortCount, drillPortFirst, drillPortFirst+drillPortCount-1)
}

func hashUID(u types.UID) uint32 {
	h := fnv.New32a()
	h.Write([]byte(u))
	return h.Sum32()
}

// drillPortsInUse are the ports of the live drill Pods in the cache.
func drillPortsInUse(ctx context.Context, c client.Reader) (map[int32]bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.HasLabels{twv1.LabelDrillPort}); err != nil {
		return nil, err
	}
	out := map[int32]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if shared.PodTerminal(p) {
			continue
		}
		if n, err := strconv.ParseInt(p.Labels[twv1.LabelDrillPort], 10, 32); err == nil {
			out[int32(n)] = true
		}
	}
	return out, nil
}

// drillPort is the port of the drill turn's Pod about to be created.
func (r *AgentTurnReconciler) drillPort(ctx context.Context, turn *twv1.AgentTurn) (int32, error) {
	inUse, err := drillPortsInUse(ctx, r.Client)
	if err != nil {
		return 0, err
	}
	return r.ports.pick(turn.UID, inUse, r.Clock.Now())
}
