package shared

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Every detector's trips, every class's rerolls and faults and every
// Outcome's durations are series from the start, so a dashboard's first
// increase() sees the first trip.
func TestMetricsStartAtZero(t *testing.T) {
	tests := []struct {
		name string
		n    int
		min  int
	}{
		{"turnwatch_trips_total", testutil.CollectAndCount(TripsTotal), 2 * len(tripDetectors)}, // enforce and audit
		{"turnwatch_rerolls_total", testutil.CollectAndCount(RerollsTotal), len(faultClasses)},
		{"turnwatch_faults_total", testutil.CollectAndCount(FaultsTotal), len(faultClasses)},
		{"turnwatch_turns_total", testutil.CollectAndCount(TurnsTotal), len(faultClasses) + 2},
		{"turnwatch_turn_duration_seconds", testutil.CollectAndCount(turnDuration), 2},
	}
	for _, tt := range tests {
		if tt.n < tt.min {
			t.Errorf("%s: %d series, want at least %d", tt.name, tt.n, tt.min)
		}
	}
	// An aborted turn's duration is never observed (observeSettled runs for
	// succeeded and failed turns only): no series that would stay empty.
	if labelValues(t, turnDuration, "outcome")[string(twv1.TurnAborted)] {
		t.Error("turnwatch_turn_duration_seconds{outcome=\"Aborted\"} exists but is never observed")
	}
	// Every detector of the table that stops a turn has its series, in
	// both modes.
	series := labelValues(t, TripsTotal, "detector")
	for _, d := range monitor.Detectors() {
		if !d.Nudges() && !series[d.Name] {
			t.Errorf("turnwatch_trips_total has no series for detector %s", d.Name)
		}
	}
	if modes := labelValues(t, TripsTotal, "mode"); !modes[ModeEnforce] || !modes[ModeAudit] {
		t.Errorf("turnwatch_trips_total modes %v, want enforce and audit", modes)
	}
	// Each detector is counted under the class its trips give.
	for _, d := range tripDetectors {
		if c := monitor.ClassOf(d); c == "" {
			t.Errorf("detector %s has no class", d)
		}
	}
}

// labelValues collects c and returns the values its series give label.
func labelValues(t *testing.T, c prometheus.Collector, label string) map[string]bool {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	out := map[string]bool{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] = true
			}
		}
	}
	return out
}
