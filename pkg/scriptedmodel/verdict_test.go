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
		scenario, format, detector, class, blind string
	}{
		{"identicalLoop", "claude", "identicalCalls", "runaway", ""},
		{"whitespace", "claude", "degeneration", "degenerate", ""},
		{"whitespace", "codex", "", "", "codex exec --json prints whole messages, no deltas: degeneration is blind (DeltasHidden)"},
		{"whitespace", "opencode", "", "", "opencode run --format json prints whole text parts, no deltas: degeneration is blind (DeltasHidden)"},
		{"whitespace", "gemini", "", "agent-error", ""},
		{"healthy", "pi", "", "", ""},
		{"apiError", "opencode", "", "agent-error", ""},
		{"lengthStop", "claude", "", "agent-error", ""},
		{"lengthStop", "gemini", "", "", "gemini's stream-json carries no finish reason: a MAX_TOKENS answer prints a success result"},
		{"lengthStop", "pi", "lengthStop", "length", ""},
		{"lengthStop", "auto", "lengthStop", "length", ""},
	}
	for _, tt := range tests {
		sc, err := Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		d, c, ex := sc.Verdict(tt.format)
		if d != tt.detector || c != tt.class || ex.Blind != tt.blind {
			t.Errorf("%s for %s: %q %q %q, want %q %q %q", tt.scenario, tt.format, d, c, ex.Blind, tt.detector, tt.class, tt.blind)
		}
		if ex.NoDeltas {
			t.Errorf("%s for %s: NoDeltas left for the caller to tell", tt.scenario, tt.format)
		}
	}
}
