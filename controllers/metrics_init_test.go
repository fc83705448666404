package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Every detector's trips, every class's rerolls and faults and every
// outcome's durations are series from the start, so a dashboard's first
// increase() sees the first trip.
func TestMetricsStartAtZero(t *testing.T) {
	tests := []struct {
		name string
		n    int
		min  int
	}{
		{"turnwatch_trips_total", testutil.CollectAndCount(tripsTotal), len(tripDetectors)},
		{"turnwatch_rerolls_total", testutil.CollectAndCount(rerollsTotal), len(faultClasses)},
		{"turnwatch_faults_total", testutil.CollectAndCount(faultsTotal), len(faultClasses)},
		{"turnwatch_turns_total", testutil.CollectAndCount(turnsTotal), len(faultClasses) + 2},
		{"turnwatch_turn_duration_seconds", testutil.CollectAndCount(turnDuration), 3},
	}
	for _, tt := range tests {
		if tt.n < tt.min {
			t.Errorf("%s: %d series, want at least %d", tt.name, tt.n, tt.min)
		}
	}
	// Each detector is counted under the class its trips give.
	for _, d := range tripDetectors {
		if c := monitor.ClassOf(d); c == "" {
			t.Errorf("detector %s has no class", d)
		}
	}
}
