package protocol

import (
	"reflect"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func TestParseAudit(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                nil,
		"identicalCalls":                  {"identicalCalls"},
		" identicalCalls, stall,,stall ,": {"identicalCalls", "stall"},
	} {
		if got := ParseAudit(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseAudit(%q) = %q, want %q", in, got, want)
		}
	}
}

// An audited length stop is no ending of its own: the result settles.
func TestEndingAuditedLength(t *testing.T) {
	length := monitor.WouldTrip{Detector: monitor.DetectorLengthStop, Class: monitor.ClassLength, Count: 1}
	tests := []struct {
		name string
		s    Summary
		want Ending
	}{
		{"length stop", Summary{StopReason: monitor.StopLength, Result: true}, EndedLength},
		{"audited, with a result", Summary{StopReason: monitor.StopLength, Result: true, WouldTrips: []WouldTrip{{WouldTrip: length}}}, EndedResult},
		{"audited, no result", Summary{StopReason: monitor.StopLength, WouldTrips: []WouldTrip{{WouldTrip: length}}}, EndedUnsaid},
		{"another audited", Summary{StopReason: monitor.StopLength, Result: true,
			WouldTrips: []WouldTrip{{WouldTrip: monitor.WouldTrip{Detector: monitor.DetectorStall}}}}, EndedLength},
	}
	for _, tt := range tests {
		if got, _ := tt.s.Ending(); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The condition's message reads back as written.
func TestWouldTripsWire(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	ws := WouldTripsOf([]monitor.WouldTrip{{Class: "runaway", Detector: "identicalCalls", Message: "m", Line: 9, Step: 4, Count: 3}},
		map[string]time.Time{"identicalCalls": at})
	if got := ParseWouldTrips(Marshal(ws)); !reflect.DeepEqual(got, ws) {
		t.Fatalf("read back %+v, want %+v", got, ws)
	}
	if ParseWouldTrips("garbage") != nil {
		t.Error("garbage read")
	}
}
