package sidecar

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// wouldTrips follows the audited detectors' would-trips
// (docs/policies.md#audit) for the reporter: a detector's first is written
// at once, in a write of its own; later counts wait for the next Progress
// period, and the Tripped or Finished write carries the last ones. So the
// writes are one per audited detector that would trip, plus at most one
// per period, however often it would trip.
type wouldTrips struct {
	seen  int                  // the engine's WouldTripCount when last looked at
	list  []protocol.WouldTrip // as the condition says them
	first map[string]time.Time // when each detector's first was seen
	// onPod are the counts an earlier run of this sidecar reported: a
	// replay from the log's start does not write smaller ones.
	onPod map[string]int
	dirty bool      // counts moved since the condition was written
	last  time.Time // when counts were last written
}

// wouldTrips reports what the engine's would-trips changed since the last
// look: nothing when none did (the common case costs one comparison).
func (r *runner) wouldTrips(ctx context.Context, eng *monitor.Engine) error {
	w := &r.rep.would
	n := eng.WouldTripCount()
	if n == w.seen {
		return nil
	}
	w.seen = n
	fresh := w.take(eng.WouldTrips(), r.clock.Now())
	for _, d := range fresh {
		r.log.Info("would trip (audited: the turn goes on)", "detector", d.Detector, "class", d.Class, "message", d.Message, "line", d.Line)
	}
	if len(fresh) > 0 {
		return r.rep.ensure(ctx, r.rep.wouldCondition())
	}
	return nil
}

// take adopts the engine's would-trips, each first seen now unless known;
// it returns the detectors new to the list.
func (w *wouldTrips) take(ws []monitor.WouldTrip, now time.Time) (fresh []monitor.WouldTrip) {
	if w.first == nil {
		w.first = map[string]time.Time{}
	}
	for _, x := range ws {
		if _, ok := w.first[x.Detector]; !ok {
			w.first[x.Detector] = now.Truncate(time.Second)
			fresh = append(fresh, x)
		}
	}
	w.list, w.dirty = protocol.WouldTripsOf(ws, w.first), true
	for i := range w.list {
		w.list[i].Count = max(w.list[i].Count, w.onPod[w.list[i].Detector])
	}
	return fresh
}

// remember adopts the times of the would-trips an earlier run of this
// sidecar reported on the Pod: a replay reports the same first times.
func (w *wouldTrips) remember(c corev1.PodCondition) {
	w.first, w.onPod = map[string]time.Time{}, map[string]int{}
	for _, x := range protocol.ParseWouldTrips(c.Message) {
		w.first[x.Detector], w.onPod[x.Detector] = x.Time, x.Count
	}
}

// wouldCondition is ConditionWouldTrip as the would-trips stand; the
// counts it carries are written.
func (r *reporter) wouldCondition() desired {
	r.would.dirty, r.would.last = false, r.clock.Now()
	return protocol.WouldTripCondition(r.would.list)
}

// withWould adds ConditionWouldTrip to a turn's last write.
func (r *reporter) withWould(conds []desired) []desired {
	if len(r.would.list) == 0 {
		return conds
	}
	return append(conds, r.wouldCondition())
}

// wouldCounts writes counts that moved once a Progress period passed since
// the last write of them; a failed write is not retried here (the next
// period, or the turn's last write, carries them).
func (r *reporter) wouldCounts(ctx context.Context) {
	if !r.would.dirty || r.clock.Now().Sub(r.would.last) < r.period {
		return
	}
	body, n := r.body([]desired{r.wouldCondition()})
	if n == 0 {
		return
	}
	if err := r.write(ctx, body); err != nil {
		r.log.Info("writing would-trip counts failed", "err", err.Error())
	}
}
