package monitor

import "testing"

// TestAnswerMemory: with answerAware, the answer compared is the last
// successful answer to that signature (error answers are never
// remembered), and the cycle count, like the identical streak, counts only
// calls from the restart on: a call before the restart is never part of a
// cycle (docs/design.md#answer-aware-identity).
func TestAnswerMemory(t *testing.T) {
	ok := func(sig, answer string) call { return call{sig, answer, false} }
	fail := func(sig string) call { return call{sig, "boom", true} }
	tests := []struct {
		name   string
		cycles int // cycleRepeats
		calls  []call
		tripAt int // index of the tripping call, -1 none
		det    string
	}{
		// A's new answer restarts the count at the 3rd call, so B before it
		// is out: A B A B from the 3rd call on is the first whole cycle.
		{"a call before the restart is not part of a cycle", 2,
			[]call{ok("a", "1"), ok("b", "x"), ok("a", "2"), ok("b", "x"), ok("a", "2"), ok("b", "x")}, 5, DetectorCycles},
		{"the restart holds for later calls too", 3,
			[]call{ok("a", "1"), ok("b", "x"), ok("c", "y"), ok("a", "2"), ok("b", "x"), ok("c", "y"),
				ok("a", "2"), ok("b", "x"), ok("c", "y"), ok("a", "2"), ok("b", "x"), ok("c", "y")}, 11, DetectorCycles},
		// The error is not remembered: the third answer is compared with the
		// first, the same, so the world did not move.
		{"an error answer is not remembered", 0,
			[]call{ok("s", "1%"), fail("s"), ok("s", "1%"), ok("s", "1%")}, 3, DetectorIdenticalCalls},
		// 2% restarts at the 2nd call; the 4th is compared with 2%, the last
		// successful answer, not with the error between.
		{"compared with the last successful answer", 0,
			[]call{ok("s", "1%"), ok("s", "2%"), fail("s"), ok("s", "2%"), ok("s", "2%")}, 4, DetectorIdenticalCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, lines := pollStream(tt.calls)
			g := guards(func(g *Guards) { g.AnswerAware = true; g.CycleRepeats = tt.cycles; g.ErrorRepeats = 0 })
			r := replayLines(t, FormatClaude, g, s.lines)
			checkTripAt(t, r, tt.det, tt.tripAt, lines)
		})
	}
}
