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
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// The loopback ports on which the sidecars of the Pods that serve their
// agent's model (a drill's scripted model, or the model gateway) listen
// (docs/drill.md#ports): below the kernel's ephemeral range (32768-60999)
// and the Service NodePort range (30000-32767), which a host-network Pod
// shares with the node.
const (
	modelPortFirst int32 = 20000
	modelPortCount int32 = 1000
	// modelPortHold keeps a port given to a turn from any other turn until
	// the cache has surely seen the turn's Pod (or its create failed long
	// ago).
	modelPortHold = 2 * time.Minute
)

// modelPorts picks those Pods' ports, unique among the cluster's live Pods
// that serve a model: Pods on the host network share the node's loopback, and the
// node is not known before the scheduler picks it. Ports in use are read
// from the cached Pods' turnwatch.dev/model-port label; a port handed out
// is held in memory until the cache shows its Pod, so that two turns
// started in the same instant do not take one port.
type modelPorts struct {
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
func (d *modelPorts) pick(turn types.UID, inUse map[int32]bool, now time.Time) (int32, error) {
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
			h.until = now.Add(modelPortHold)
			d.held[p] = h
			return p, nil
		}
	}
	start := int32(hashUID(turn) % uint32(modelPortCount))
	for i := range modelPortCount {
		p := modelPortFirst + (start+i)%modelPortCount
		if _, taken := d.held[p]; taken || inUse[p] {
			continue
		}
		d.held[p] = portHold{turn: turn, until: now.Add(modelPortHold)}
		return p, nil
	}
	return 0, fmt.Errorf("all %d model ports (%d-%d) are taken by live Pods that serve a model", modelPortCount, modelPortFirst, modelPortFirst+modelPortCount-1)
}

func hashUID(u types.UID) uint32 {
	h := fnv.New32a()
	h.Write([]byte(u))
	return h.Sum32()
}

// modelPortsInUse are the ports of the live Pods that serve a model, in the
// cache.
func modelPortsInUse(ctx context.Context, c client.Reader) (map[int32]bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.HasLabels{twv1.LabelModelPort}); err != nil {
		return nil, err
	}
	out := map[int32]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if shared.PodTerminal(p) {
			continue
		}
		if n, err := strconv.ParseInt(p.Labels[twv1.LabelModelPort], 10, 32); err == nil {
			out[int32(n)] = true
		}
	}
	return out, nil
}

// modelPort is the port of the turn's Pod about to be created, which
// serves its agent's model.
func (r *AgentTurnReconciler) modelPort(ctx context.Context, turn *twv1.AgentTurn) (int32, error) {
	inUse, err := modelPortsInUse(ctx, r.Client)
	if err != nil {
		return 0, err
	}
	return r.ports.pick(turn.UID, inUse, r.Clock.Now())
}

// modelOptions sets what the Pod of a turn needs from the cluster to
// serve its agent's model (render.ServesModel): its port and a fresh
// placeholder key; and, for every turn, what the namespace's budgets have
// left (the sidecar refuses the next model request once the turn spent
// it).
func (r *AgentTurnReconciler) modelOptions(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, o *render.RenderOptions) error {
	if left, source, ok := turnpolicy.BudgetLeft(o.Policies); ok {
		o.BudgetLeftUSD, o.Budget = left.String(), source
	}
	if !render.ServesModel(run, o.Policies) {
		return nil
	}
	port, err := r.modelPort(ctx, turn)
	if err != nil {
		return err
	}
	token, err := render.ModelToken()
	if err != nil {
		return err
	}
	o.ModelPort, o.ModelToken = port, token
	return nil
}
