package controllers

import (
	"context"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Status freshness at steady state (docs/performance.md, "Writes at steady
// state"). A running agent's steps and cost travel in two API writes: the
// sidecar's Progress condition on its Pod, then the run's status, which the
// run reconciler computes with the live turn's counts read from that Pod.
// The AgentTurn's own copy of the counts is refreshed far less often
// (turnRefreshFactor), and exactly when the turn settles: a third write per
// hop would cost 1,000 agents another 17 writes a second.
const (
	// defaultStatusFreshness is how old the steps and cost that
	// `kubectl get agentruns` shows may be.
	defaultStatusFreshness = time.Minute
	// foldMargin is the part of the freshness window left to the controller
	// to fold a Progress write into the run's status.
	foldMargin = 5 * time.Second
	// turnRefreshFactor: a running turn's own counts are rewritten at most
	// once per this many freshness windows (the first report at once).
	turnRefreshFactor = 10
)

// progressPeriod is the least time between two of the sidecar's Progress
// writes for a given freshness: the sidecar writes at most that often, and
// only when its counts moved.
func progressPeriod(freshness time.Duration) time.Duration {
	return max(time.Second, freshness-foldMargin)
}

// progressEnv is the sidecar's Progress period in whole seconds.
func progressEnv(freshness time.Duration) corev1.EnvVar {
	return corev1.EnvVar{Name: protocol.EnvProgressPeriod, Value: strconv.Itoa(int(progressPeriod(freshness) / time.Second))}
}

// countsOnly says whether next differs from cur in steps and cost alone.
func countsOnly(cur, next twv1.AgentTurnStatus) bool {
	cur.Steps, cur.CostUSD = next.Steps, next.CostUSD
	return equality.Semantic.DeepEqual(cur, next)
}

// countsThrottle remembers when each running turn's counts were last
// written, so that a change of counts alone is written at most once per
// period, and the newest counts it held back, so that a turn that settles
// on a path that does not read its Pod (deleted Pod, abort, infra) still
// records them. Settled turns are forgotten.
type countsThrottle struct {
	mu sync.Mutex
	m  map[types.UID]heldCounts
}

type heldCounts struct {
	at    time.Time // last counts write
	held  bool      // counts below were held back since
	steps int64
	cost  string
}

// hold says how long a counts-only write of st must wait; 0 lets it through
// now, and records it.
func (c *countsThrottle) hold(uid types.UID, st *twv1.AgentTurnStatus, now time.Time, every time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.UID]heldCounts{}
	}
	if h, ok := c.m[uid]; ok {
		if left := h.at.Add(every).Sub(now); left > 0 {
			c.m[uid] = heldCounts{at: h.at, held: true, steps: st.Steps, cost: st.CostUSD}
			return left
		}
	}
	c.m[uid] = heldCounts{at: now}
	return 0
}

// settle raises a settling turn's counts to those held back, if ahead, and
// forgets the turn.
func (c *countsThrottle) settle(uid types.UID, st *twv1.AgentTurnStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[uid]
	delete(c.m, uid)
	if ok && h.held && countsAhead(&protocol.Progress{Steps: int(h.steps), CostUSD: h.cost}, *st) {
		st.Steps, st.CostUSD = h.steps, h.cost
	}
}

// holdCounts keeps a running turn's counts as they are when they are all
// that changed and the turn's last counts write is recent: the run's status
// carries them fresh already (withLiveCounts). It returns when to look again.
func (r *AgentTurnReconciler) holdCounts(turn *twv1.AgentTurn, st *twv1.AgentTurnStatus, now time.Time) time.Duration {
	if st.Outcome != "" || equality.Semantic.DeepEqual(*st, turn.Status) || !countsOnly(turn.Status, *st) {
		return 0
	}
	wait := r.counts.hold(turn.UID, st, now, turnRefreshFactor*r.Config.freshness())
	if wait > 0 {
		st.Steps, st.CostUSD = turn.Status.Steps, turn.Status.CostUSD
	}
	return wait
}

// withLiveCounts gives each running turn the counts its sidecar last
// reported on the turn's Pod, or those the run's status already showed for
// it, when they are ahead of the turn's own copy: a running turn's counts
// never go back in the run's status, even when its Pod is gone. Steps and
// cost stay per turn, and the run's are their sum (setTotals).
func (r *AgentRunReconciler) withLiveCounts(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn) []twv1.AgentTurn {
	for i := range turns {
		t := &turns[i]
		if t.Status.Outcome != "" {
			continue
		}
		for _, shown := range run.Status.Turns {
			if c := (protocol.Progress{Steps: int(shown.Steps), CostUSD: shown.CostUSD}); shown.Name == t.Name && countsAhead(&c, t.Status) {
				t.Status.Steps, t.Status.CostUSD = shown.Steps, shown.CostUSD
			}
		}
		if t.Status.PodName == "" {
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Status.PodName}, pod); err != nil {
			continue
		}
		if !metav1.IsControlledBy(pod, t) {
			continue
		}
		if c := podCounts(pod); c != nil && countsAhead(c, t.Status) {
			t.Status.Steps, t.Status.CostUSD = int64(c.Steps), c.CostUSD
		}
	}
	return turns
}

// countsAhead says whether the Pod's counts are valid and not behind the
// turn's: both only grow within a turn.
func countsAhead(c *protocol.Progress, st twv1.AgentTurnStatus) bool {
	cost, err := parseUSD(c.CostUSD)
	if err != nil || int64(c.Steps) < st.Steps {
		return false
	}
	was, err := parseUSD(st.CostUSD)
	return err != nil || cost >= was
}

// podRun maps a turn's Pod to its run, by the run label the Pod carries.
func podRun(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[twv1.LabelRun]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// progressMoved passes Pod updates whose Progress condition changed: the
// run's status folds it in. Everything else on the Pod is the turn's. A
// Progress that came with the trip is not passed: the turn settles with
// those counts at once, and the run's status follows the turn, so folding
// them first would be one more write of the run's status per tripped turn.
var progressMoved = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return progressMessage(e.ObjectOld) != progressMessage(e.ObjectNew) && !podTripped(e.ObjectNew)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// podTripped says whether the sidecar reported a trip on the Pod.
func podTripped(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	c := podCondition(pod, protocol.ConditionTripped)
	return c != nil && c.Status == corev1.ConditionTrue
}

func progressMessage(obj client.Object) string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return ""
	}
	if c := podCondition(pod, protocol.ConditionProgress); c != nil {
		return c.Message
	}
	return ""
}

// freshness is the configured status freshness, or the default.
func (c Config) freshness() time.Duration {
	if c.StatusFreshness.Duration > 0 {
		return c.StatusFreshness.Duration
	}
	return defaultStatusFreshness
}
