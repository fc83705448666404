package scriptedmodel

import (
	"testing"

	"turnwatch.dev/turnwatch/pkg/agents"
)

// Every exception of the CLIs' table names a scenario of this table.
func TestExceptionsAreKnown(t *testing.T) {
	for _, c := range agents.CLIs {
		for name := range c.Exceptions {
			if _, err := Lookup(name); err != nil {
				t.Errorf("agents.CLIs %s exceptions: %v", c.Format, err)
			}
		}
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		scenario, format       string
		modelSide              bool
		detector, class, blind string
	}{
		{"identicalLoop", "claude", false, "identicalCalls", "runaway", ""},
		{"whitespace", "claude", false, "degeneration", "degenerate", ""},
		{"whitespace", "codex", false, "", "", "codex exec --json prints whole messages, no deltas: degeneration is blind (DeltasHidden)"},
		{"whitespace", "opencode", false, "", "", "opencode run --format json prints whole text parts, no deltas: degeneration is blind (DeltasHidden)"},
		{"whitespace", "codex", true, "degeneration", "degenerate", ""},
		{"whitespace", "opencode", true, "degeneration", "degenerate", ""},
		{"whitespace", "gemini", false, "", "agent-error", ""},
		{"whitespace", "gemini", true, "", "agent-error", ""},
		{"healthy", "pi", false, "", "", ""},
		{"apiError", "opencode", false, "", "agent-error", ""},
		{"lengthStop", "claude", false, "", "agent-error", ""},
		{"lengthStop", "claude", true, "", "agent-error", ""},
		{"lengthStop", "gemini", false, "", "", "gemini's stream-json carries no finish reason: a MAX_TOKENS answer prints a success result"},
		{"lengthStop", "gemini", true, "lengthStop", "length", ""},
		{"lengthStop", "pi", false, "lengthStop", "length", ""},
		{"lengthStop", "auto", false, "lengthStop", "length", ""},
	}
	for _, tt := range tests {
		sc, err := Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		d, c, ex := sc.Verdict(tt.format, tt.modelSide)
		if d != tt.detector || c != tt.class || ex.Blind != tt.blind {
			t.Errorf("%s for %s (model side %v): %q %q %q, want %q %q %q", tt.scenario, tt.format, tt.modelSide, d, c, ex.Blind, tt.detector, tt.class, tt.blind)
		}
		if ex.NoDeltas || ex.NoStop {
			t.Errorf("%s for %s: NoDeltas or NoStop left for the caller to tell", tt.scenario, tt.format)
		}
	}
}
