package explain

import (
	"strings"
	"testing"
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
