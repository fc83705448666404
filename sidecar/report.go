package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// statusPatcher writes the sidecar's own Pod status; podStatus is the real one.
type statusPatcher interface {
	patch(ctx context.Context, body []byte) (*corev1.Pod, error)
}

// reporter writes the sidecar's verdicts as conditions on its own Pod, per
// docs/protocol.md. Every write is idempotent: it knows the conditions as
// last stored on the Pod and does not write one that is already there with
// the same status, reason and message, so a restarted sidecar that replays
// the log from the start reports nothing twice.
type reporter struct {
	pod     statusPatcher
	clock   clock.PassiveClock
	backoff backoff
	// period is the least time between two Progress writes.
	period time.Duration
	// run, when set, takes the progress reports instead of the Pod
	// (run_progress.go).
	run *runProgress
	log logr.Logger

	present      map[string]corev1.PodCondition // as last read from the Pod
	lastProgress time.Time                      // when Progress was last written
	writes       int                            // patches that changed something
	streaks      int                            // silent-run nudges seen in this run of the sidecar
	// riders are conditions that tell but decide nothing (DeltasHidden):
	// they go out with the next write rather than cost one of their own.
	// A turn always ends with one (Tripped or Finished).
	riders []desired
	// drill, on a drill turn, is what its scripted model served so far
	// (drill.go); lastDrill is when its report was last written.
	drill     func() protocol.DrillReport
	lastDrill time.Time
	// would are the audited detectors' would-trips (wouldtrip.go).
	would wouldTrips
}

// desired is one condition the sidecar wants on its Pod.
type desired = protocol.Condition

// condition is the patch form of a Pod condition. Unlike corev1.PodCondition
// it leaves out the times it does not set: a null would clear them.
type condition struct {
	Type               string                 `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
	LastTransitionTime *metav1.Time           `json:"lastTransitionTime,omitempty"`
}

// patchCondition is c as a patch sets it: True, and since when when the
// patch moves its transition time.
func patchCondition(c protocol.Condition, since *metav1.Time) condition {
	return condition{Type: c.Type, Status: corev1.ConditionTrue, Reason: c.Reason, Message: c.Message, LastTransitionTime: since}
}

// load reads the Pod's conditions as they stand, retrying until it can.
func (r *reporter) load(ctx context.Context) error {
	return r.retry(ctx, "reading the own Pod", func() error {
		pod, err := r.pod.patch(ctx, []byte("{}"))
		if err == nil {
			r.remember(pod)
			if c, ok := r.present[protocol.ConditionWouldTrip]; ok {
				r.would.remember(c)
			}
			// The first Progress waits a period too: the run's status may be
			// that old anyway (statusFreshness), and a turn shorter than a
			// period then reports its counts only with its trip or summary,
			// three API writes fewer (Progress, the turn's and the run's).
			r.lastProgress = r.clock.Now()
		}
		return err
	})
}

// remember keeps the Pod's conditions as stored.
func (r *reporter) remember(pod *corev1.Pod) {
	r.present = make(map[string]corev1.PodCondition, len(pod.Status.Conditions))
	for _, c := range pod.Status.Conditions {
		r.present[string(c.Type)] = c
	}
}

// has says whether the Pod carries c already, with status True.
func (r *reporter) has(c desired) bool {
	p, ok := r.present[c.Type]
	return ok && p.Status == corev1.ConditionTrue && p.Reason == c.Reason && p.Message == c.Message
}

// over says whether the turn was already settled on the Pod (by an earlier
// run of this sidecar): tripped or finished. Then nothing more is reported.
func (r *reporter) over() bool {
	for _, t := range []string{protocol.ConditionTripped, protocol.ConditionFinished} {
		if c, ok := r.present[t]; ok && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// ensure writes those of conds that the Pod does not carry yet, in one patch,
// retrying with backoff until it succeeds, a retry cannot help, or ctx ends.
func (r *reporter) ensure(ctx context.Context, conds ...desired) error {
	body, n := r.body(append(conds, r.riders...))
	if n == 0 {
		r.riders = nil
		return nil
	}
	if err := r.retry(ctx, "writing conditions", func() error { return r.write(ctx, body) }); err != nil {
		return err
	}
	r.riders = nil
	return nil
}

// body is the patch that sets the missing ones of conds, and how many.
func (r *reporter) body(conds []desired) ([]byte, int) {
	var out []condition
	now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
	for _, c := range conds {
		if r.has(c) {
			continue
		}
		// The transition time moves only when the status does.
		var since *metav1.Time
		if p, ok := r.present[c.Type]; !ok || p.Status != corev1.ConditionTrue {
			since = &now
		}
		out = append(out, patchCondition(c, since))
	}
	if len(out) == 0 {
		return nil, 0
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": out}})
	return body, len(out)
}

// write sends one patch and keeps what the Pod stores after it.
func (r *reporter) write(ctx context.Context, body []byte) error {
	pod, err := r.pod.patch(ctx, body)
	if err != nil {
		return err
	}
	r.writes++
	r.remember(pod)
	return nil
}

// retry runs op until it succeeds, fails for good, or ctx ends, waiting with
// exponential backoff in between.
func (r *reporter) retry(ctx context.Context, what string, op func() error) error {
	delay := r.backoff.first()
	refusal := refusals{grace: r.backoff.refusalGrace}
	for {
		err := op()
		if err == nil {
			return nil
		}
		if refusal.final(err, r.clock.Now()) {
			return fmt.Errorf("%s: %w", what, err)
		}
		r.log.Info("retrying", "what", what, "err", err.Error(), "in", delay)
		if !sleepCtx(ctx, delay) {
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		delay = r.backoff.next(delay)
	}
}

// tripped reports a detector that ended the turn, together with the progress
// at that moment (nothing is reported after a trip, so this is the last word
// on steps and cost until the controller reads the Pod).
func (r *reporter) tripped(ctx context.Context, detector, message string, p protocol.Progress) error {
	conds := []desired{protocol.TripCondition(detector, message)}
	if r.ahead(p) {
		conds = append(conds, protocol.ProgressCondition(p))
	}
	return r.ensure(ctx, r.withWould(r.withDrill(conds))...)
}

// silent reports a silent-run nudge as the turn's next streak. Each
// streak's message names its number, so every streak is written; a
// restarted sidecar replaying the log skips the streaks its Pod already
// shows (the condition holds the latest), so none is written twice and the
// condition never goes back to an earlier one.
func (r *reporter) silent(ctx context.Context, detector, message string) error {
	r.streaks++
	if c, ok := r.present[protocol.ConditionSilent]; ok && c.Status == corev1.ConditionTrue && protocol.NudgeStreak(c.Message) >= r.streaks {
		return nil
	}
	return r.ensure(ctx, protocol.NudgeCondition(r.streaks, detector, message))
}

// deltasHidden reports, with the next write, that the agent's stream
// hides the model's deltas.
func (r *reporter) deltasHidden(message string) {
	r.warn(protocol.ConditionDeltasHidden, protocol.ReasonDeltasHidden, message)
}

// logRotated reports at once that the kubelet rotated the log past the line
// the sidecar was reading (follow_rotation.go): a warning that should not
// wait for the turn's end. One try; a failed write leaves it to ride with
// the next one. A restarted sidecar that finds it on the Pod already says
// nothing more: once per turn is enough.
func (r *reporter) logRotated(ctx context.Context, message string) {
	c := protocol.WarningCondition(protocol.Warning{Condition: protocol.ConditionLogRotated, Reason: protocol.ReasonLogRotated}, message)
	if p, ok := r.present[c.Type]; ok && p.Status == corev1.ConditionTrue {
		return
	}
	body, n := r.body(append([]desired{c}, r.riders...))
	if n == 0 {
		return
	}
	if err := r.write(ctx, body); err != nil {
		r.log.Info("writing the rotation warning failed; it goes with the next write", "err", err.Error())
		r.warn(c.Type, c.Reason, c.Message)
		return
	}
	r.riders = nil
}

// warn reports one of protocol.Warnings with the next write.
func (r *reporter) warn(condition, reason, message string) {
	r.riders = append(r.riders, protocol.WarningCondition(protocol.Warning{Condition: condition, Reason: reason}, message))
}

// detectorSilentRun is the silent-run nudge's detector name (docs/design.md#silent-tool-run).
const detectorSilentRun = "silentRun"

// finished reports the summary of the stream; a length stop, judged at the
// end, comes in the same patch.
func (r *reporter) finished(ctx context.Context, s protocol.Summary, lengthStop *desired) error {
	conds := []desired{}
	if lengthStop != nil {
		conds = append(conds, *lengthStop)
	}
	conds = append(conds, protocol.FinishedCondition(s))
	return r.ensure(ctx, r.withWould(r.withDrill(conds))...)
}

// progress writes p if it is ahead of what the Pod carries and the last
// Progress write is at least one period ago. It is called after every line
// and on every tick, so a value held back by the throttle goes out at the
// next call after the period. A failed write is not retried here: the next
// call carries a newer value anyway.
// readLag notes when the sidecar read a line stamped at: its lag rides on
// the run's progress reports (run_progress.go).
func (r *reporter) readLag(at, now time.Time) {
	if r.run != nil && !at.IsZero() {
		r.run.readLag(at, now)
	}
}

func (r *reporter) progress(ctx context.Context, p protocol.Progress) {
	if r.run != nil {
		r.progressToRun(ctx, p)
		return
	}
	if !r.progressDue() || !r.ahead(p) {
		return
	}
	body, n := r.body([]desired{protocol.ProgressCondition(p)})
	if n == 0 {
		return
	}
	r.lastProgress = r.clock.Now()
	if err := r.write(ctx, body); err != nil {
		r.log.Info("writing progress failed", "err", err.Error())
	}
}

// progressDue says whether the throttle lets a Progress write through.
func (r *reporter) progressDue() bool {
	return r.clock.Now().Sub(r.lastProgress) >= r.period
}

// ahead says whether p is further than the Progress the Pod carries (none
// counts as zero). Counts only grow within a turn (protocol.Progress.Ahead),
// so a restarted sidecar replaying the log writes no Progress until it
// passes the point its predecessor reported.
func (r *reporter) ahead(p protocol.Progress) bool {
	var was protocol.Progress
	if c, ok := r.present[protocol.ConditionProgress]; ok {
		if err := json.Unmarshal([]byte(c.Message), &was); err != nil {
			return true // unreadable: overwrite it
		}
	}
	return p.Ahead(was)
}
