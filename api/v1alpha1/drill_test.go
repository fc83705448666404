package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// spec.drill.scenario admits exactly the scripted model's scenarios: the
// CRD's enum marker is written by hand, the table is the model's.
func TestDrillScenariosAreTheModels(t *testing.T) {
	src, err := os.ReadFile("drill.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*// \+kubebuilder:validation:Enum=(\S+)\n\s*// \+required\n\s*Scenario string`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no Enum marker on Drill.Scenario")
	}
	if got, want := strings.Split(string(m[1]), ";"), scriptedmodel.Names(); !slices.Equal(got, want) {
		t.Errorf("Drill.Scenario's enum %v, the scripted model's scenarios %v", got, want)
	}
}

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
