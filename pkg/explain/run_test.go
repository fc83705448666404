package explain

import (
	"strings"
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// A turn's notes (its nudges as their Events say them, the sidecar's
// warnings) are printed under its row, in order.
func TestRunTextNotes(t *testing.T) {
	r := &Run{Namespace: "ns", Name: "r", Phase: "Succeeded", Turns: []Turn{{
		Name: "r-0", Outcome: "Succeeded", Steps: 14,
		Notes: []string{"nudge, streak 1: 13 tool-only model messages [delivered to the agent]", "HooksNotRun: no turnwatch hook ran"},
	}}}
	var b strings.Builder
	if err := r.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i, j := strings.Index(out, "[delivered to the agent]"), strings.Index(out, "HooksNotRun: no turnwatch hook ran")
	if i < 0 || j < i || strings.Index(out, "r-0") > i {
		t.Errorf("notes missing or out of order:\n%s", out)
	}
}

// A drill run says so under its headline: the scenario, what it expected,
// its result and what it got, and the note; any other run says nothing.
func TestRunTextDrill(t *testing.T) {
	yes := true
	tests := []struct {
		name  string
		drill *Drill
		wants []string
	}{
		{"caught", &Drill{DrillStatus: twv1.DrillStatus{Scenario: "identicalLoop", Expected: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"},
			Result: "Caught", Got: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, AtCall: 4, CallRefused: &yes}},
			[]string{"drill identicalLoop: expected identicalCalls/runaway, result Caught (got identicalCalls/runaway at call 4)\n"}},
		{"blind", &Drill{DrillStatus: twv1.DrillStatus{Scenario: "whitespace", Result: "AsExpected", Note: "codex exec --json prints whole messages"}},
			[]string{"drill whitespace: expected none, result AsExpected\n", "  note: codex exec --json prints whole messages\n"}},
		{"pending", &Drill{DrillStatus: twv1.DrillStatus{Scenario: "apiError", Expected: twv1.DrillVerdict{Class: "agent-error"}}},
			[]string{"drill apiError: expected agent-error, result -\n"}},
	}
	for _, tt := range tests {
		r := &Run{Namespace: "ns", Name: "r", Phase: "Faulted", Drill: tt.drill}
		var b strings.Builder
		if err := r.WriteText(&b, false); err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(b.String(), "TURN")
		for _, w := range tt.wants {
			if !strings.Contains(head, w) {
				t.Errorf("%s: header lacks %q:\n%s", tt.name, w, head)
			}
		}
	}
	var b strings.Builder
	if err := (&Run{Namespace: "ns", Name: "r", Phase: "Succeeded"}).WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "drill") {
		t.Errorf("a run that is no drill says drill:\n%s", b.String())
	}
}

// An attached Pod's turn is headed by its Pod, its owner, and the format
// and agent container its sidecar followed.
func TestRunTextAttached(t *testing.T) {
	tests := []struct {
		name     string
		attached *Attached
		head     string
	}{
		{"a Job's Pod", &Attached{Format: "claude", AgentContainer: "agent", Owner: "Job/nightly"},
			"Pod ns/nightly-x7k2p (attached, owner Job/nightly): Failed (runaway, identicalCalls) in turn nightly-x7k2p\nformat claude, agent container agent\n"},
		{"a bare Pod", &Attached{Format: "auto", AgentContainer: "main"},
			"Pod ns/nightly-x7k2p (attached): Failed (runaway, identicalCalls) in turn nightly-x7k2p\nformat auto, agent container main\n"},
	}
	for _, tt := range tests {
		r := &Run{Namespace: "ns", Name: "nightly-x7k2p", Phase: "Failed", Attached: tt.attached,
			Fault: &Turn{Name: "nightly-x7k2p", Class: "runaway", Detector: "identicalCalls"}}
		var b strings.Builder
		if err := r.WriteText(&b, false); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tt.head) {
			t.Errorf("%s: headline\n%s\nwant\n%s", tt.name, b.String(), tt.head)
		}
	}
}
