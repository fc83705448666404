package agentturn

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// EventWouldTrip is the reason of the Normal Event that tells, once per
// turn and detector, that an audited detector would have stopped the turn
// and the turn went on (docs/policies.md#audit).
const EventWouldTrip = protocol.ReasonWouldTrip

// setWouldTrips records the sidecar's would-trips on the turn's status:
// a detector's first would-trip as first reported, its count as the
// latest report says (counts only grow within a turn, so an older report
// read from a stale cache never lowers one).
func setWouldTrips(st *twv1.AgentTurnStatus, ws []protocol.WouldTrip) {
	for _, w := range ws {
		i := slices.IndexFunc(st.WouldTrip, func(x twv1.WouldTrip) bool { return x.Detector == w.Detector })
		if i >= 0 {
			st.WouldTrip[i].Count = max(st.WouldTrip[i].Count, int32(w.Count))
			continue
		}
		entry := twv1.WouldTrip{Detector: w.Detector, Class: twv1.FaultClass(w.Class), Count: int32(w.Count),
			Message: w.Message, Step: int64(w.Step)}
		if !w.Time.IsZero() {
			entry.Time = shared.PtrTime(metav1.NewTime(w.Time))
		}
		st.WouldTrip = append(st.WouldTrip, entry)
	}
}

// WouldTripDetectors are the detectors a status records would-trips of.
func WouldTripDetectors(st *twv1.AgentTurnStatus) []string {
	out := make([]string, len(st.WouldTrip))
	for i, w := range st.WouldTrip {
		out[i] = w.Detector
	}
	return out
}

// RecordWouldTrips tells each detector the turn's status gained since
// before: one Normal WouldTrip Event, one count of turnwatch_trips_total
// with mode "audit". Called after the write that recorded them, so that a
// pass that lost a conflict and read the turn again does not tell them
// twice. The Events are about regarding: a run's turn's run, an attached
// Pod's turn itself.
func RecordWouldTrips(rec events.EventRecorder, regarding runtime.Object, turn *twv1.AgentTurn, before []string) {
	for _, w := range turn.Status.WouldTrip {
		if slices.Contains(before, w.Detector) {
			continue
		}
		shared.TripsTotal.WithLabelValues(w.Detector, string(w.Class), shared.DrillLabel(turn.Labels), shared.ModeAudit).Inc()
		rec.Eventf(regarding, turn, corev1.EventTypeNormal, EventWouldTrip, "Audit",
			"turn %s: %s would have stopped the turn at step %d (%s); audited, the turn goes on", turn.Name, w.Detector, w.Step, w.Message)
	}
}
