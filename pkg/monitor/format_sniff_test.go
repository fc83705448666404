package monitor

import (
	"testing"

	"turnwatch.dev/turnwatch/pkg/agents"
)

// Every CLI of the table has a format row with a parser and a sniff (auto
// picks it), and every format row is a CLI's.
func TestEveryFormatSniffs(t *testing.T) {
	for _, c := range agents.CLIs {
		i := formatIndex(c.Format)
		switch {
		case i < 0:
			t.Errorf("CLI %s has no row in formats: the engine cannot read its stream", c.Format)
		case formats[i].parse == nil:
			t.Errorf("format %s has no parser", c.Format)
		case formats[i].sniff == nil:
			t.Errorf("format %s has no sniff: auto never picks it", c.Format)
		}
	}
	for _, f := range formats {
		if _, ok := agents.Lookup(f.name); !ok {
			t.Errorf("format %s is no CLI's of agents.CLIs: New refuses it", f.name)
		}
	}
	if formatIndex(FormatAuto) >= 0 {
		t.Error("auto has a row in formats")
	}
}
