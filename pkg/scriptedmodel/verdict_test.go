package scriptedmodel

import "testing"

// Every exception names a format the samples have and a scenario of the
// table, and says one thing: blind or the CLI's own guard.
func TestExceptionsAreKnown(t *testing.T) {
	for format, byScenario := range Exceptions {
		if _, ok := Endpoints[format]; !ok {
			t.Errorf("Exceptions names format %q, which has no Endpoint", format)
		}
		for name, ex := range byScenario {
			if _, err := Lookup(name); err != nil {
				t.Errorf("Exceptions[%s]: %v", format, err)
			}
			if (ex.Blind == "") == (ex.Own == "") {
				t.Errorf("Exceptions[%s][%s] = %+v: want exactly one of Blind and Own", format, name, ex)
			}
		}
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		scenario, format, detector, class string
	}{
		{"identicalLoop", "claude", "identicalCalls", "runaway"},
		{"whitespace", "claude", "degeneration", "degenerate"},
		{"whitespace", "codex", "", ""},
		{"whitespace", "gemini", "", "agent-error"},
		{"healthy", "pi", "", ""},
		{"apiError", "opencode", "", "agent-error"},
		{"lengthStop", "claude", "", "agent-error"},
		{"lengthStop", "pi", "lengthStop", "length"},
	}
	for _, tt := range tests {
		sc, err := Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		if d, c, _ := sc.Verdict(tt.format); d != tt.detector || c != tt.class {
			t.Errorf("%s for %s: %q %q, want %q %q", tt.scenario, tt.format, d, c, tt.detector, tt.class)
		}
	}
}
