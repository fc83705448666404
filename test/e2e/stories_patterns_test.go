//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestTripsPatterns runs the pattern detectors (docs/design.md#cycles and
// after) on the real node,
// one scenario each, through the same story as TestTrips: the sidecar's
// condition, the turn Failed with the class, the fault on the AgentRun and
// `kubectl describe`. cycles is off by default: the run switches it on in
// spec.guards, as a team would after calibrate.
func TestTripsPatterns(t *testing.T) {
	needOperator(t)
	t.Parallel()
	tests := []struct {
		name  string
		spec  runSpec
		story tripStory
	}{{
		name: "cycle",
		spec: runSpec{scenario: "cycle", format: "claude", speed: 2, rerolls: ptr[int64](0),
			guards: map[string]any{"cycleRepeats": 4}},
		story: tripStory{detector: "cycles", class: "runaway", attempts: 1},
	}, {
		name:  "errors",
		spec:  runSpec{scenario: "repeatedErrors", format: "pi", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "repeatedErrors", class: "runaway", attempts: 1},
	}, {
		name:  "repeat",
		spec:  runSpec{scenario: "repetition", format: "gemini", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "repetition", class: "degenerate", attempts: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "trip-pattern-" + tt.name
			createRun(t, name, tt.spec)
			waitRun(t, name, 4*time.Minute)
			checkTripStory(t, name, tt.spec, tt.story)
		})
	}
}
