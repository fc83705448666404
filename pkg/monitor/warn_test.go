package monitor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// warnFirst, through the fold: where nudges are delivered, the turn's first
// identical-calls trip becomes a nudge naming the loop at the line the trip
// would have been, the streak starts over (the warning at the 4th call, the
// trip at the 8th), and there is one warning per turn.
func TestWarnFirst(t *testing.T) {
	tests := []struct {
		name      string
		delivery  string
		warnFirst bool
		calls     int  // identical calls in a row
		changes   bool // after the 4th call the agent calls something else, then 4 more of the first
		wantNudge int  // call number of the warning, 0 for none
		wantTrip  int  // call number of the trip, 0 for none
	}{
		{"off: the 4th trips", "file", false, 8, false, 0, 4},
		{"not delivered: the 4th trips", "none", true, 8, false, 0, 4},
		{"warned at the 4th, trips at the 8th", "file", true, 12, false, 4, 8},
		{"warned and changed course: finishes", "file", true, 6, false, 4, 0},
		{"one warning per turn: a new loop after a change trips", "file", true, 4, true, 4, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := guards(func(g *Guards) { g.NudgeDelivery, g.WarnFirst = tt.delivery, tt.warnFirst })
			s := &stream{}
			s.add(cInit())
			callLine := map[int]int{} // call number -> line
			n := 0
			call := func(name string) {
				n++
				s.claudeToolOnly(name, map[string]any{"q": "x"}, false)
				callLine[n] = s.len() - 1
			}
			for i := 0; i < tt.calls; i++ {
				call("grep")
			}
			if tt.changes {
				call("read")
				for i := 0; i < 4; i++ {
					call("grep")
				}
			}
			s.claudeSpeak("done")
			s.add(cResult(0.01))
			r := replayLines(t, FormatClaude, g, s.lines)
			var warned []Nudge
			for _, nu := range r.Nudges {
				if nu.Detector == DetectorIdenticalCalls {
					warned = append(warned, nu)
				}
			}
			switch {
			case tt.wantNudge == 0 && len(warned) != 0:
				t.Fatalf("warned: %+v", warned)
			case tt.wantNudge != 0 && (len(warned) != 1 || warned[0].Line != callLine[tt.wantNudge] ||
				warned[0].Message != WarningText("repeated an identical tool call 4 times")):
				t.Fatalf("warnings %+v, want one at line %d", warned, callLine[tt.wantNudge])
			}
			switch {
			case tt.wantTrip == 0 && len(r.Trips) != 0:
				t.Fatalf("tripped: %+v", r.Trips)
			case tt.wantTrip != 0 && (len(r.Trips) != 1 || r.Trips[0].Line != callLine[tt.wantTrip] || r.Trips[0].Detector != DetectorIdenticalCalls):
				t.Fatalf("trips %+v, want identicalCalls at line %d", r.Trips, callLine[tt.wantTrip])
			}
		})
	}
}

// The silent-run nudge names its detector too, and a warning is not a trip.
func TestNudgeNamesDetector(t *testing.T) {
	s := &stream{}
	s.add(cInit())
	for i := 0; i < 13; i++ {
		s.claudeToolOnly("read", map[string]any{"i": i}, false)
	}
	r := replayLines(t, FormatClaude, DefaultGuards(), s.lines)
	if len(r.Nudges) != 1 || r.Nudges[0].Detector != DetectorSilentRun {
		t.Fatalf("nudges %+v", r.Nudges)
	}
}

func TestParseGuardsNudges(t *testing.T) {
	tests := []struct {
		in       string
		delivery string
		warn     bool
		err      bool
	}{
		{`{}`, "none", false, false},
		{`{"nudgeDelivery":"file","warnFirst":true}`, "file", true, false},
		{`{"nudgeDelivery":"none"}`, "none", false, false},
		{`{"nudgeDelivery":"socket"}`, "none", false, true},
		{`{"warnFirst":"yes"}`, "", false, true},
	}
	for _, tt := range tests {
		g, err := ParseGuards([]byte(tt.in))
		if (err != nil) != tt.err {
			t.Fatalf("%s: err %v", tt.in, err)
		}
		if err == nil && (g.NudgeDelivery != tt.delivery || g.WarnFirst != tt.warn) {
			t.Fatalf("%s: %+v", tt.in, g)
		}
	}
	b, _ := json.Marshal(Guards{NudgeDelivery: NudgeDeliveryFile, WarnFirst: true})
	back, err := ParseGuards(b)
	if err != nil || !back.Delivers() || !back.WarnFirst {
		t.Fatalf("round trip %s: %+v %v", b, back, err)
	}
}

// Whatever the stream, warnFirst says at most one warning per turn, never
// more than one trip, and a warning names a loop detector.
func FuzzWarnFirst(f *testing.F) {
	seedCorpus(f, "claude")
	f.Fuzz(func(t *testing.T, data []byte) {
		g := DefaultGuards()
		g.NudgeDelivery, g.WarnFirst = NudgeDeliveryFile, true
		g.IdenticalCalls = 2
		e, err := New(Options{Format: FormatAuto, Guards: g})
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			e.Feed(line, time.Time{})
		}
		e.Finish()
		r := e.Report()
		warnings := 0
		for _, n := range r.Nudges {
			if n.Detector != DetectorSilentRun {
				warnings++
				if !IsLoopDetector(n.Detector) {
					t.Fatalf("warning from %s", n.Detector)
				}
			}
		}
		if warnings > 1 || len(r.Trips) > 1 {
			t.Fatalf("%d warnings, %d trips", warnings, len(r.Trips))
		}
	})
}

// Cycles and repeated errors are loop detectors too: warned at their first
// trip, their count starts over, and the next loop trip (any loop) trips.
func TestWarnFirstOtherLoops(t *testing.T) {
	warn := func(g *Guards) { g.NudgeDelivery, g.WarnFirst = NudgeDeliveryFile, true }
	t.Run("cycles", func(t *testing.T) {
		s := &stream{}
		var calls []int
		for _, r := range "ABABABABABABABABAB" {
			s.claudeToolOnly("read", map[string]any{"path": string(r)}, false)
			calls = append(calls, s.len()-1)
		}
		r := replayLines(t, FormatClaude, guards(func(g *Guards) { g.CycleRepeats, g.SilentTurns = 4, 0; warn(g) }), s.lines)
		// Warned at the 8th call (A B x4); the count starts over at the 9th,
		// so the 16th call completes four more copies and trips.
		if len(r.Nudges) != 1 || r.Nudges[0].Detector != DetectorCycles || r.Nudges[0].Line != calls[7] ||
			!strings.HasPrefix(r.Nudges[0].Message, "you have repeated a cycle of 2 tool calls 4 times; change course") {
			t.Fatalf("nudges %s", js(r.Nudges))
		}
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorCycles || r.Trips[0].Line != calls[15] {
			t.Fatalf("trips %s, want cycles at line %d", js(r.Trips), calls[15])
		}
	})
	t.Run("repeated errors", func(t *testing.T) {
		s := &stream{}
		var lines []int
		for i := 0; i < 14; i++ {
			errorAnswer[FormatClaude](s, i, true, "error: no such file")
			lines = append(lines, s.len())
		}
		g := guards(func(g *Guards) { g.IdenticalCalls, g.SilentTurns = 0, 0; warn(g) })
		r := replayLines(t, FormatClaude, g, s.lines)
		if len(r.Nudges) != 1 || r.Nudges[0].Detector != DetectorRepeatedErrors || r.Nudges[0].Line != lines[5] ||
			!strings.HasPrefix(r.Nudges[0].Message, "you got the same tool error 6 times in a row") {
			t.Fatalf("nudges %s", js(r.Nudges))
		}
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorRepeatedErrors || r.Trips[0].Line != lines[11] {
			t.Fatalf("trips %s, want repeatedErrors at line %d", js(r.Trips), lines[11])
		}
	})
	t.Run("one warning per turn: a cycle after an identical-calls warning trips", func(t *testing.T) {
		s := &stream{}
		var calls []int
		for _, r := range "AAAABABABABAB" {
			s.claudeToolOnly("read", map[string]any{"path": string(r)}, false)
			calls = append(calls, s.len()-1)
		}
		r := replayLines(t, FormatClaude, guards(func(g *Guards) { g.CycleRepeats = 4; warn(g) }), s.lines)
		if len(r.Nudges) != 1 || r.Nudges[0].Detector != DetectorIdenticalCalls || len(r.Trips) != 1 || r.Trips[0].Detector != DetectorCycles {
			t.Fatalf("nudges %s trips %s", js(r.Nudges), js(r.Trips))
		}
	})
}

// Guards that set only the nudge fields are not "forgotten" guards: New
// keeps them (every detector then off but what they name).
func TestNudgeOnlyGuardsAreKept(t *testing.T) {
	e, err := New(Options{Format: FormatClaude, Guards: Guards{NudgeDelivery: NudgeDeliveryFile, WarnFirst: true}})
	if err != nil {
		t.Fatal(err)
	}
	if g := e.State().Guards; !g.Delivers() || !g.WarnFirst || g.StepBudget != 0 {
		t.Fatalf("guards %+v", g)
	}
}
