package monitor

import (
	"strings"
	"testing"
)

// The pattern detectors' guards in the replay guards file (and the sidecar's env): their
// defaults, their names, and the values refused.
func TestParseGuardsPatterns(t *testing.T) {
	g, err := ParseGuards(nil)
	if err != nil || g.CycleRepeats != 0 || g.ErrorRepeats != 6 || g.RepeatedTextBytes != 4096 || g.AnswerAware {
		t.Fatalf("defaults %+v %v", g, err)
	}
	g, err = ParseGuards([]byte(`{"cycleRepeats":4,"errorRepeats":0,"repeatedTextBytes":2048,"answerAware":true}`))
	if err != nil || g.CycleRepeats != 4 || g.ErrorRepeats != 0 || g.RepeatedTextBytes != 2048 || !g.AnswerAware {
		t.Fatalf("parsed %+v %v", g, err)
	}
	for _, tt := range []struct{ in, field string }{
		{`{"cycleRepeats":1}`, "cycleRepeats"},
		{`{"errorRepeats":-1}`, "errorRepeats"},
		{`{"repeatedTextBytes":"big"}`, "repeatedTextBytes"},
		{`{"answerAware":"yes"}`, "answerAware"},
	} {
		if _, err := ParseGuards([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: err %v, want one naming %s", tt.in, err, tt.field)
		}
	}
	// A zero Guards means the defaults; one that only sets a pattern knob does not.
	if (Guards{AnswerAware: true}).isZero() || !(Guards{}).isZero() {
		t.Error("isZero must see the pattern guards")
	}
}
