package shared

import (
	"strings"
	"testing"
)

// The cluster defaults of the nudge guards: none and false unless the
// config says otherwise; an unknown delivery is refused by name.
func TestConfigNudgeGuards(t *testing.T) {
	tests := []struct {
		yaml     string
		delivery string
		warn     bool
		err      string
	}{
		{``, "none", false, ""},
		{"guards:\n  nudgeDelivery: file\n  warnFirst: true\n", "file", true, ""},
		{"guards:\n  nudgeDelivery: socket\n", "", false, "guards.nudgeDelivery"},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig([]byte(tt.yaml))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want one naming %s", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if g := cfg.Guards; *g.NudgeDelivery != tt.delivery || *g.WarnFirst != tt.warn {
			t.Errorf("%q: nudgeDelivery %s warnFirst %v", tt.yaml, *g.NudgeDelivery, *g.WarnFirst)
		}
	}
}
