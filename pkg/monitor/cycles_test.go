package monitor

import (
	"fmt"
	"strings"
	"testing"
)

func TestCyclesCheck(t *testing.T) {
	tests := []struct {
		r, cycle, period int
		want             bool
	}{{4, 3, 2, false}, {4, 4, 2, true}, {4, 5, 3, true}, {2, 2, 5, true}, {0, 99, 2, false}}
	for _, tt := range tests {
		reason, msg, failed := cycles(&State{Guards: Guards{CycleRepeats: tt.r}, Cycle: tt.cycle, CyclePeriod: tt.period})
		if failed != tt.want {
			t.Errorf("r %d cycle %d: failed=%v want %v", tt.r, tt.cycle, failed, tt.want)
		}
		if failed && (reason != DetectorCycles || msg != fmt.Sprintf("repeated a cycle of %d tool calls %d times", tt.period, tt.r)) {
			t.Errorf("reason %q message %q", reason, msg)
		}
	}
}

// cycleTrack, by itself: copies of a sequence of 2..5 signatures, not all
// the same, counted up to the last call.
func TestCycleTrack(t *testing.T) {
	tests := []struct {
		seq            string // one letter per call signature
		copies, period int
	}{
		{"ABABABAB", 4, 2},
		{"ABABABA", 3, 2},  // A B A B A B + A: three whole copies
		{"AAAAAAAA", 0, 0}, // identical calls, not a cycle
		{"ABCABCABC", 3, 3},
		{"ABCDEABCDE", 2, 5},
		{"ABCDEFABCDEF", 0, 0}, // period 6 is beyond 5
		{"XYZABAB", 2, 2},
		{"ABABCABAB", 2, 2}, // broken at C: counting starts again
		{"AABAAB", 2, 3},
		{"ABBA", 0, 0},
	}
	for _, tt := range tests {
		var c cycleTrack
		for _, r := range tt.seq {
			c.push(uint64(r))
		}
		if copies, period := c.best(); copies != tt.copies || period != tt.period {
			t.Errorf("%s: %d copies of %d, want %d of %d", tt.seq, copies, period, tt.copies, tt.period)
		}
	}
}

// restart (answerAware) keeps only the calls from the one whose answer was
// new: ABABAB restarted at the 4th call back holds B A B, one copy and a half.
func TestCycleTrackRestart(t *testing.T) {
	var c cycleTrack
	for _, r := range "ABABABAB" {
		c.push(uint64(r))
	}
	c.restart(4)
	if copies, _ := c.best(); copies != 2 {
		t.Fatalf("%d copies after a restart 4 calls back, want 2", copies)
	}
	c.restart(1)
	if copies, _ := c.best(); copies != 0 {
		t.Fatalf("%d copies after a restart at the last call, want 0", copies)
	}
}

// Through the fold: the trip line, off by default, restated parts, the
// worldTools reset and checked after identical calls on the same call.
func TestCyclesFold(t *testing.T) {
	build := func(seq string, world bool) (*stream, []int) {
		s := &stream{}
		var callLines []int
		for _, r := range seq {
			name := "read"
			if world && r == 'W' {
				name = "run_tests"
			}
			s.claudeToolOnly(name, map[string]any{"path": string(r)}, false)
			callLines = append(callLines, s.len()-1)
		}
		return s, callLines
	}
	on := guards(func(g *Guards) { g.CycleRepeats = 4; g.WorldTools = []string{"run_tests"} })
	tests := []struct {
		name   string
		seq    string
		g      Guards
		tripAt int // index of the tripping call, -1 none
	}{
		{"A B x4 trips at the 8th call", "ABABABABAB", on, 7},
		{"off by default", "ABABABABAB", DefaultGuards(), -1},
		{"three copies do not", "ABABAB", on, -1},
		{"a period of 3", "ABCABCABCABC", on, 11},
		{"a world answer resets", "AWAWAWAWAW", on, -1},
		{"identical calls are not a cycle", "AAAAAA", guards(func(g *Guards) { g.CycleRepeats = 2; g.IdenticalCalls = 0 }), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, calls := build(tt.seq, true)
			r := replayLines(t, FormatClaude, tt.g, s.lines)
			if tt.tripAt < 0 {
				if len(r.Trips) != 0 {
					t.Fatalf("trips %s, want none", js(r.Trips))
				}
				return
			}
			if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorCycles || r.Trips[0].Line != calls[tt.tripAt] ||
				r.Trips[0].Class != ClassRunaway || !strings.HasPrefix(r.Trips[0].Message, "repeated a cycle of") {
				t.Fatalf("trips %s, want cycles at line %d", js(r.Trips), calls[tt.tripAt])
			}
		})
	}
	t.Run("restated parts neither extend nor break", func(t *testing.T) {
		s := &stream{}
		var last string
		for i, r := range "ABABABAB" {
			msg, id := s.id("msg"), s.id("toolu")
			block := map[string]any{"type": "tool_use", "id": id, "name": "read", "input": map[string]any{"path": string(r)}}
			s.add(cAssistant(msg, []any{block}, "tool_use"))
			if i == 3 {
				s.add(cAssistant(msg, []any{block}, "tool_use")) // the same id again
			}
			s.add(cToolResult(id, false))
			last = msg
		}
		_ = last
		r := replayLines(t, FormatClaude, on, s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorCycles || r.Steps != 8 {
			t.Fatalf("steps %d trips %s, want cycles at the 8th call", r.Steps, js(r.Trips))
		}
	})
	t.Run("identical calls are judged first", func(t *testing.T) {
		// A B A B trips cycles of 2 x 2 at the 4th call; with an
		// identical-call budget of 1, that check comes first on each call.
		g := guards(func(g *Guards) { g.CycleRepeats = 2; g.IdenticalCalls = 2 })
		s, calls := build("AB"+"AB"+"AA", false)
		r := replayLines(t, FormatClaude, g, s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorCycles || r.Trips[0].Line != calls[3] {
			t.Fatalf("trips %s, want cycles at the 4th call", js(r.Trips))
		}
		s, calls = build("ABAB", false)
		g.IdenticalCalls, g.CycleRepeats = 1, 2
		r = replayLines(t, FormatClaude, g, s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorIdenticalCalls || r.Trips[0].Line != calls[0] {
			t.Fatalf("trips %s, want identicalCalls first", js(r.Trips))
		}
	})
}
