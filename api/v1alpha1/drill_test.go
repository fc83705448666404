package v1alpha1

import "testing"

func TestDrillResultFailed(t *testing.T) {
	for r, want := range map[DrillResult]bool{DrillPending: false, DrillCaught: false, DrillCaughtOtherwise: false,
		DrillMissed: true, DrillAsExpected: false, DrillFalseAlarm: true} {
		if r.Failed() != want {
			t.Errorf("%s.Failed() = %v", r, !want)
		}
	}
}

func TestDrillVerdictString(t *testing.T) {
	for _, tt := range []struct {
		v    DrillVerdict
		want string
	}{
		{DrillVerdict{Class: ClassRunaway, Detector: "identicalCalls"}, "identicalCalls/runaway"},
		{DrillVerdict{Class: ClassRunaway, Detector: "cycles"}, "cycles/runaway"},
		{DrillVerdict{Class: ClassAgentError}, "agent-error"},
		{DrillVerdict{Detector: "silentRun"}, "silentRun"},
		{DrillVerdict{}, "none"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.want)
		}
	}
}
