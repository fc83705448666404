package shared

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Status freshness at steady state (docs/performance.md, "Writes at steady
// state"). A running agent's steps and cost travel in one API write: the
// sidecar patches its run's status (status.progress, and the run's totals),
// guarded by the admission policy turnwatch-sidecar-run-progress; the
// controller writes nothing for it and counts the running turn with that
// report whenever it writes the run's status (liveCounts). The AgentTurn's
// own copy of the counts is written when the turn settles; only a sidecar
// that reports on its Pod (one started by hand) refreshes it while it runs,
// at most once per turnRefreshFactor windows: a write per report would cost
// 1,000 agents another 18 writes a second.
const (
	// defaultStatusFreshness is how old the steps and cost that
	// `kubectl get agentruns` shows may be.
	defaultStatusFreshness = time.Minute
	// foldMargin is the part of the freshness window left to the report's
	// way to the API server (and, for a report on the Pod, its fold into the
	// run's status).
	foldMargin = 5 * time.Second
	// TurnRefreshFactor: a running turn's own counts are rewritten at most
	// once per this many freshness windows (the first report at once).
	TurnRefreshFactor = 10
)

// ProgressPeriod is the least time between two of the sidecar's Progress
// writes for a given freshness: the sidecar writes at most that often, and
// only when its counts moved.
func ProgressPeriod(freshness time.Duration) time.Duration {
	return max(time.Second, freshness-foldMargin)
}

// ProgressEnv is the sidecar's Progress period in whole seconds.
func ProgressEnv(freshness time.Duration) corev1.EnvVar {
	return corev1.EnvVar{Name: protocol.EnvProgressPeriod, Value: strconv.Itoa(int(ProgressPeriod(freshness) / time.Second))}
}

// CountsOnly says whether next differs from cur in steps and cost alone.
func CountsOnly(cur, next twv1.AgentTurnStatus) bool {
	cur.Steps, cur.CostUSD = next.Steps, next.CostUSD
	return equality.Semantic.DeepEqual(cur, next)
}

// CountsThrottle remembers when each running turn's counts were last
// written, so that a change of counts alone is written at most once per
// period, and the newest counts it held back, so that a turn that settles
// on a path that does not read its Pod (deleted Pod, abort, infra) still
// records them. Settled turns are forgotten.
type CountsThrottle struct {
	mu sync.Mutex
	m  map[types.UID]heldCounts
}

type heldCounts struct {
	at     time.Time // last counts write
	held   bool      // counts below were held back since
	counts protocol.Progress
}

// Hold says how long a counts-only write of st must wait; 0 lets it through
// now, and records it.
func (c *CountsThrottle) Hold(uid types.UID, st *twv1.AgentTurnStatus, now time.Time, every time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.UID]heldCounts{}
	}
	if h, ok := c.m[uid]; ok {
		if left := h.at.Add(every).Sub(now); left > 0 {
			c.m[uid] = heldCounts{at: h.at, held: true, counts: turnCounts(*st)}
			return left
		}
	}
	c.m[uid] = heldCounts{at: now}
	return 0
}

// Observe remembers counts shown for a running turn elsewhere (its run's
// status.progress) as held back, when ahead: a turn that settles on a path
// without its Pod's summary (abort, deleted Pod) still records them.
func (c *CountsThrottle) Observe(uid types.UID, p *protocol.Progress) {
	if p == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.UID]heldCounts{}
	}
	h := c.m[uid]
	if h.held && p.Behind(h.counts) {
		return
	}
	h.held, h.counts = true, *p
	c.m[uid] = h
}

// Settle raises a settling turn's counts to those held back, field by
// field (setTurnCounts), and forgets the turn.
func (c *CountsThrottle) Settle(uid types.UID, st *twv1.AgentTurnStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[uid]
	delete(c.m, uid)
	if ok && h.held {
		SetTurnCounts(st, h.counts)
	}
}

// Held are the newest counts held back or observed for a running turn.
func (c *CountsThrottle) Held(uid types.UID) (protocol.Progress, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[uid]
	return h.counts, ok && h.held
}

// LiveCounts are the steps and cost of turn ref for the run's totals: its
// own, or, while it runs, its sidecar's latest report in status.progress
// when that is ahead.
// A cost that is not a decimal counts as zero: it must not stop the run's
// bookkeeping.
func LiveCounts(ref twv1.TurnRef, p *twv1.RunProgress) protocol.Progress {
	own, err := protocol.ParseProgress(ref.Steps, ref.CostUSD)
	if err != nil {
		own = protocol.Progress{Steps: ref.Steps}
	}
	if ref.Outcome != "" || p == nil || p.Turn != ref.Name {
		return own
	}
	if c, err := protocol.ParseProgress(p.Steps, p.CostUSD); err == nil && !c.Behind(own) {
		return c
	}
	return own
}

// RunProgressFor is what the run's status.progress says of the named turn,
// or nil.
func RunProgressFor(run *twv1.AgentRun, turn string) *protocol.Progress {
	// A report with another run's UID is from a sidecar of an earlier run
	// of the same name (the admission policy refuses it where installed).
	p := run.Status.Progress
	if p == nil || p.Turn != turn || p.RunUID != "" && p.RunUID != string(run.UID) {
		return nil
	}
	if c, err := protocol.ParseProgress(p.Steps, p.CostUSD); err == nil {
		return &c
	}
	return nil
}

// SidecarProgressEnv tells the sidecar where to report progress (its run's
// status) and what the earlier turns counted, so that it writes the run's
// totals itself.
func SidecarProgressEnv(turn *twv1.AgentTurn) []corev1.EnvVar {
	var runUID string
	if owner := metav1.GetControllerOf(turn); owner != nil {
		runUID = string(owner.UID)
	}
	return []corev1.EnvVar{
		{Name: protocol.EnvRunName, Value: turn.Spec.RunName},
		{Name: protocol.EnvRunUID, Value: runUID},
		{Name: protocol.EnvPriorSteps, Value: strconv.FormatInt(turn.Spec.PriorSteps, 10)},
	}
}

// CountsAhead says whether c is not behind the turn's own counts: both only
// grow within a turn (protocol.Progress.Behind). A turn's cost that is not a
// decimal counts as zero, so that c replaces it.
func CountsAhead(c protocol.Progress, st twv1.AgentTurnStatus) bool {
	return !c.Behind(turnCounts(st))
}

// turnCounts are a turn's own counts; a cost that is not a decimal counts
// as zero.
func turnCounts(st twv1.AgentTurnStatus) protocol.Progress {
	c, err := protocol.ParseProgress(st.Steps, st.CostUSD)
	if err != nil {
		return protocol.Progress{Steps: st.Steps}
	}
	return c
}

// Freshness is the configured status freshness, or the default.
func (c Config) Freshness() time.Duration {
	if c.StatusFreshness.Duration > 0 {
		return c.StatusFreshness.Duration
	}
	return defaultStatusFreshness
}

// PriorCounts are the steps and cost of a new turn's earlier turns, as the
// run's status sums them: the sidecar starts its report of the run's totals
// there, and weighs the cost against the spend cap.
func PriorCounts(turns []twv1.AgentTurn) protocol.Progress {
	var n protocol.Progress
	for i := range turns {
		n = n.Add(turnCounts(turns[i].Status))
	}
	return n
}

// IgnoreConflict drops a conflict: the object changed under the pass (a
// sidecar's progress report, most often), and the event of that change
// brings it back to a pass on the newer copy.
func IgnoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// MemoStatus is the run's status as the write memo compares it: without
// the fields a sidecar's progress report writes. A report that lands
// between the controller's write and the cache's view of it must not make
// the cached copy look older than that write (write_memo.go).
func MemoStatus(st twv1.AgentRunStatus) twv1.AgentRunStatus {
	st.Steps, st.CostUSD, st.Progress = 0, "", nil
	return st
}
