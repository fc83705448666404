package sidecar

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// resultQuiet is how long the agent's output must stay open after its final
// result before the sidecar says so (ConditionResult). An agent that exits
// within it ends the output, and the Finished condition says it all: no
// extra write for the common case.
const resultQuiet = 5 * time.Second

// resultWatch notices an agent that printed its final result and does not
// exit, and tells the controller (which stops it after exitGrace). Used
// from the runner's loop only.
type resultWatch struct {
	since time.Time // when the result was first seen; zero while there is none
	told  bool
}

// check is called on every tick with the engine's result flag and the time
// of the last line read. It writes the Result condition once, when the
// result has stood for resultQuiet; a failed write is tried again next tick.
func (w *resultWatch) check(ctx context.Context, rep *reporter, eng *monitor.Engine, lastSeen, now time.Time) {
	if c, ok := rep.present[protocol.ConditionResult]; ok && c.Status == corev1.ConditionTrue {
		w.told = true // an earlier run of this sidecar said it, with the first time
	}
	if w.told {
		return
	}
	r := eng.Report()
	if !r.Result {
		w.since = time.Time{} // a new attempt started in the same stream
		return
	}
	if w.since.IsZero() {
		w.since = lastSeen
	}
	if now.Sub(w.since) < resultQuiet {
		return
	}
	if err := rep.result(ctx, w.since, protocol.SummaryOf(r)); err != nil {
		rep.log.Info("writing the result condition failed", "err", err.Error())
		return
	}
	w.told = true
}

// result writes ConditionResult with the time the result was read as its
// transition time and the summary so far as its message (so that a result
// that reports a failure settles as one), with the progress at that moment,
// in one patch.
func (r *reporter) result(ctx context.Context, at time.Time, s protocol.Summary) error {
	t := metav1.NewTime(at.Truncate(time.Second))
	p := s.Progress
	conds := []condition{patchCondition(protocol.ResultCondition(s), &t)}
	if r.ahead(p) {
		pc := patchCondition(protocol.ProgressCondition(p), nil)
		if prev, ok := r.present[pc.Type]; !ok || prev.Status != corev1.ConditionTrue {
			now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
			pc.LastTransitionTime = &now
		}
		conds = append(conds, pc)
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	return r.write(ctx, body)
}
