package agentturn

import (
	"testing"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A detector's first report is kept; its count follows the latest report
// and never goes back (a stale read).
func TestSetWouldTrips(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	loop := monitor.WouldTrip{Class: "runaway", Detector: "identicalCalls", Message: "repeated an identical tool call 4 times", Line: 37, Step: 4, Count: 1}
	st := &twv1.AgentTurnStatus{}
	setWouldTrips(st, protocol.WouldTripsOf([]monitor.WouldTrip{loop}, map[string]time.Time{"identicalCalls": at}))
	later := loop
	later.Count, later.Message = 6, "another text"
	stall := monitor.WouldTrip{Class: "stalled", Detector: "stall", Message: "no output", Step: 9, Count: 1}
	setWouldTrips(st, protocol.WouldTripsOf([]monitor.WouldTrip{later, stall}, nil))
	setWouldTrips(st, protocol.WouldTripsOf([]monitor.WouldTrip{loop}, nil)) // stale
	if len(st.WouldTrip) != 2 {
		t.Fatalf("%+v", st.WouldTrip)
	}
	w := st.WouldTrip[0]
	if w.Detector != "identicalCalls" || w.Class != twv1.ClassRunaway || w.Count != 6 || w.Message != loop.Message || w.Step != 4 ||
		w.Time == nil || !w.Time.Time.Equal(at) {
		t.Errorf("identicalCalls %+v", w)
	}
	if s := st.WouldTrip[1]; s.Detector != "stall" || s.Count != 1 || s.Time != nil || s.Class != twv1.ClassStalled {
		t.Errorf("stall %+v", s)
	}
}
