package monitor

import (
	"fmt"
	"strings"
	"testing"
)

// The three incidents of docs/design.md#the-three-incidents as executable
// facts: each test fails if the rule that answers its incident breaks.

// docs/design.md#the-reviewer-that-never-stopped:
// a reviewer given an empty diff made ~100 byte-identical grep
// calls. The identical-call rule trips at the 4th, in every format that
// carries tool calls.
func TestIncidentIdenticalGrepsTripAtFourth(t *testing.T) {
	grep := map[string]any{"pattern": "TODO", "path": "."}
	build := map[string]func() (*stream, int){
		FormatClaude: func() (*stream, int) {
			s := &stream{}
			s.add(cInit())
			fourth := 0
			for i := 1; i <= 100; i++ {
				s.claudeToolOnly("Grep", grep, false)
				if i == 4 {
					fourth = s.len() - 1 // the assistant line of the 4th call
				}
			}
			return s, fourth
		},
		FormatPi: func() (*stream, int) {
			s := &stream{}
			s.add(`{"type":"agent_start"}`)
			fourth := 0
			for i := 1; i <= 100; i++ {
				s.piToolOnly("grep", grep, false)
				if i == 4 {
					fourth = s.len() - 2 // message_end: the arguments are complete
				}
			}
			return s, fourth
		},
	}
	for format, b := range build {
		t.Run(format, func(t *testing.T) {
			s, fourth := b()
			r := replayLines(t, format, DefaultGuards(), s.lines)
			want := []Trip{{Class: ClassRunaway, Detector: DetectorIdenticalCalls, Message: "repeated an identical tool call 4 times", Line: fourth}}
			if js(r.Trips) != js(want) {
				t.Fatalf("trips %s, want %s", js(r.Trips), js(want))
			}
			if r.Steps != 4 {
				t.Errorf("steps %d, want 4 (the tripping call is counted)", r.Steps)
			}
		})
	}
}

// Identity is byte-identical arguments in canonical JSON: key order,
// whitespace and escapes do not hide a repetition.
func TestIncidentIdenticalCanonicalJSON(t *testing.T) {
	args := []string{`{"path":".","pattern":"TODO"}`, `{"pattern":"TODO","path":"."}`,
		`{ "pattern" : "TO\u0044O", "path" : "." }`, `{"path":"\u002e","pattern":"TODO"}`}
	s := &stream{}
	for _, a := range args {
		id := s.id("toolu")
		s.add(fmt.Sprintf(`{"type":"assistant","message":{"id":%q,"content":[{"type":"tool_use","id":%q,"name":"Grep","input":%s}]}}`, s.id("msg"), id, a),
			cToolResult(id, false))
	}
	r := replayLines(t, FormatClaude, DefaultGuards(), s.lines)
	if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorIdenticalCalls || r.Trips[0].Line != 7 {
		t.Fatalf("trips %s, want identicalCalls at line 7", js(r.Trips))
	}
}

// docs/design.md#the-reviewer-that-never-stopped:
// healthy turns peaked at 53 steps; an honest bug hunt burned 161.
// Neither trips the step budget of 256; the 257th step does.
func TestIncidentStepBudget(t *testing.T) {
	for _, tt := range []struct {
		steps int
		trip  bool
	}{{53, false}, {161, false}, {256, false}, {257, true}} {
		t.Run(fmt.Sprint(tt.steps), func(t *testing.T) {
			s := &stream{}
			for i := 1; i <= tt.steps; i++ {
				s.claudeToolOnly("Read", map[string]any{"file_path": fmt.Sprintf("src/f%d.go", i)}, false)
				if i%10 == 0 {
					s.claudeSpeak("progress so far") // an honest run reports
				}
			}
			r := replayLines(t, FormatClaude, DefaultGuards(), s.lines)
			if !tt.trip {
				if len(r.Trips)+len(r.Nudges) != 0 || r.Steps != tt.steps {
					t.Fatalf("steps %d trips %s nudges %s, want %d steps and nothing else", r.Steps, js(r.Trips), js(r.Nudges), tt.steps)
				}
				return
			}
			last := lineOf(s.lines, "src/f257.go", 1)
			want := []Trip{{Class: ClassRunaway, Detector: DetectorStepBudget, Message: "exceeded 256 steps", Line: last}}
			if js(r.Trips) != js(want) || r.Steps != 257 {
				t.Fatalf("steps %d trips %s, want 257 and %s", r.Steps, js(r.Trips), js(want))
			}
		})
	}
}

// docs/design.md#the-agent-that-never-reported:
// 16 tool-only turns, each with different code, no word to the
// humans. Repetition sees nothing; the silent run is nudged exactly once,
// at the 13th, and the run goes on.
func TestIncidentSilentRunNudgedOnceAtThirteenth(t *testing.T) {
	s := &stream{}
	s.add(`{"type":"agent_start"}`)
	thirteenth := 0
	for i := 1; i <= 16; i++ {
		s.piToolOnly("clojure_eval", map[string]any{"code": fmt.Sprintf("(count (range %d))", i)}, false)
		if i == 13 {
			thirteenth = s.len() - 2 // the message_end of the 13th
		}
	}
	r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
	if len(r.Trips) != 0 {
		t.Fatalf("trips %s, want none: varying calls are not repetition", js(r.Trips))
	}
	if len(r.Nudges) != 1 || r.Nudges[0].Line != thirteenth || !strings.HasPrefix(r.Nudges[0].Message, "13 tool-only") {
		t.Fatalf("nudges %s, want one at line %d", js(r.Nudges), thirteenth)
	}
}

// docs/design.md#the-agent-that-never-reported (its review):
// speaking resets the streak; whitespace is not
// speaking; a message with neither text nor tools neither resets nor
// extends it (walk back to the last message that spoke).
func TestIncidentSilentRunStreakRules(t *testing.T) {
	tools := func(s *stream, n int) {
		for i := 0; i < n; i++ {
			s.piToolOnly("bash", map[string]any{"command": s.id("echo")}, false)
		}
	}
	empty := func(s *stream) {
		m := piMsg([]any{}, 0, "stop")
		s.add(js(map[string]any{"type": "message_end", "message": m}))
	}
	tests := []struct {
		name   string
		build  func(s *stream)
		nudges int
	}{
		{"speaking resets", func(s *stream) { tools(s, 12); s.piSpeak("Found it."); tools(s, 12) }, 0},
		{"speaking resets, then 13 more", func(s *stream) { tools(s, 12); s.piSpeak("Found it."); tools(s, 13) }, 1},
		{"whitespace is not speaking", func(s *stream) { tools(s, 12); s.piSpeak(" \n\t "); tools(s, 1) }, 1},
		{"escaped whitespace is not speaking", func(s *stream) { tools(s, 12); s.piSpeak("\u00a0\u3000\n"); tools(s, 1) }, 1},
		{"empty messages neither reset nor extend", func(s *stream) { tools(s, 6); empty(s); empty(s); tools(s, 6) }, 0},
		{"empty messages do not reset", func(s *stream) { tools(s, 6); empty(s); tools(s, 7) }, 1},
		{"once per streak", func(s *stream) { tools(s, 30) }, 1},
		{"a new streak may be nudged again", func(s *stream) { tools(s, 13); s.piSpeak("Report."); tools(s, 13) }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			tt.build(s)
			r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
			if len(r.Nudges) != tt.nudges || len(r.Trips) != 0 {
				t.Fatalf("nudges %s trips %s, want %d nudges", js(r.Nudges), js(r.Trips), tt.nudges)
			}
		})
	}
}

// docs/design.md#the-reviewer-that-never-stopped:
// four run_tests answered by a flaky suite are a model reading
// answers (worldTools reset the streak); the same call refused four times
// (answered as an error: nothing ran) is a runaway.
func TestIncidentWorldTools(t *testing.T) {
	g := guards(func(g *Guards) { g.WorldTools = []string{"run_tests"} })
	for _, tt := range []struct {
		name    string
		isError bool
		trip    bool
	}{{"answered", false, false}, {"refused", true, true}} {
		for _, format := range []string{FormatPi, FormatClaude} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				s := &stream{}
				for i := 0; i < 4; i++ {
					if format == FormatPi {
						s.piToolOnly("run_tests", map[string]any{"suite": "all"}, tt.isError)
					} else {
						s.claudeToolOnly("run_tests", map[string]any{"suite": "all"}, tt.isError)
					}
				}
				r := replayLines(t, format, g, s.lines)
				if got := len(r.Trips) == 1 && r.Trips[0].Detector == DetectorIdenticalCalls; got != tt.trip {
					t.Fatalf("trips %s, want trip=%v", js(r.Trips), tt.trip)
				}
			})
		}
	}
}

// docs/design.md#the-turn-that-was-alive-but-useless:
// a model streamed whitespace-only reasoning until the length
// cap, five runs in a row. Degeneration trips at the 128th delta, long
// before the cap; the length stop never gets to judge.
func TestIncidentWhitespaceReasoningTripsBeforeLengthCap(t *testing.T) {
	s := &stream{}
	s.add(`{"type":"agent_start"}`, js(map[string]any{"type": "message_start", "message": piMsg([]any{}, 0, "length")}))
	for i := 0; i < 4000; i++ {
		s.piDelta("thinking", "\n", 0)
	}
	s.add(js(map[string]any{"type": "message_end", "message": piMsg([]any{}, 0, "length")}), `{"type":"agent_end","messages":[]}`)
	r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
	want := []Trip{{Class: ClassDegenerate, Detector: DetectorDegeneration, Message: "128 consecutive whitespace-only deltas (128 bytes)", Line: 2 + 128}}
	if js(r.Trips) != js(want) {
		t.Fatalf("trips %s, want %s", js(r.Trips), js(want))
	}
	// Without the degeneration guard the same stream settles as a length stop.
	r = replayLines(t, FormatPi, guards(func(g *Guards) { g.WhitespaceDeltas, g.WhitespaceBytes = 0, 0 }), s.lines)
	if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorLengthStop || r.Trips[0].Line != s.len()-1 {
		t.Fatalf("trips %s, want lengthStop at line %d", js(r.Trips), s.len()-1)
	}
}

// docs/design.md#the-turn-that-was-alive-but-useless:
// spend was only visible at turn end. pi reports the message's
// cost on every partial; the cap trips mid-message, at the first partial
// whose cost passes it, and a partial and its final message are never
// counted twice.
func TestIncidentSpendTripsMidMessage(t *testing.T) {
	s := &stream{}
	s.add(`{"type":"agent_start"}`)
	// An earlier message of $0.40, then a message whose partials climb.
	m := piMsg([]any{piText("done")}, 0.40, "stop")
	s.add(js(map[string]any{"type": "message_end", "message": m}))
	for i := 1; i <= 20; i++ {
		s.piDelta("text", "word ", float64(i)*0.01)
	}
	g := guards(func(g *Guards) { g.MaxCostUSD = "0.50" })
	r := replayLines(t, FormatPi, g, s.lines)
	// 0.40 + 0.10 is not over; 0.40 + 0.11 is: the 11th partial, line 3+10.
	want := []Trip{{Class: ClassOverspend, Detector: DetectorSpend, Message: "spent $0.51, over the $0.50 cap", Line: 13}}
	if js(r.Trips) != js(want) {
		t.Fatalf("trips %s, want %s", js(r.Trips), js(want))
	}
	if r.CostUSD != "0.51" {
		t.Errorf("cost %s, want 0.51", r.CostUSD)
	}
}
