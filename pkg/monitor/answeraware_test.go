package monitor

import "testing"

// answerAware: a poll called identically whose answer is new each time is
// progress; one that gets the same answer is a loop. Errors never count as
// the world moving.
func TestAnswerAware(t *testing.T) {
	poll := func(answers ...string) []call {
		var c []call
		for _, a := range answers {
			c = append(c, call{"status", a, false})
		}
		return c
	}
	tests := []struct {
		name   string
		aware  bool
		calls  []call
		tripAt int // index of the tripping call, -1 none
		det    string
	}{
		{"new answers each time", true, poll("1%", "20%", "55%", "80%", "99%", "done"), -1, ""},
		{"off: the same poll trips", false, poll("1%", "20%", "55%", "80%"), 3, DetectorIdenticalCalls},
		{"the same answer four times trips", true, poll("1%", "1%", "1%", "1%"), 3, DetectorIdenticalCalls},
		// The call whose answer is new counts 1: 20% restarts at the 2nd call.
		{"restarts at the call with the new answer", true, poll("1%", "20%", "20%", "20%", "20%"), 4, DetectorIdenticalCalls},
		{"errors never move the world", true, []call{{"status", "e1", true}, {"status", "e2", true}, {"status", "e3", true}, {"status", "e4", true}}, 3, DetectorIdenticalCalls},
		{"a cycle whose answers change", true, []call{{"a", "1", false}, {"b", "x", false}, {"a", "2", false}, {"b", "x", false},
			{"a", "3", false}, {"b", "x", false}, {"a", "4", false}, {"b", "x", false}}, -1, ""},
		{"a cycle whose answers repeat", true, []call{{"a", "1", false}, {"b", "x", false}, {"a", "1", false}, {"b", "x", false},
			{"a", "1", false}, {"b", "x", false}, {"a", "1", false}, {"b", "x", false}}, 7, DetectorCycles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, lines := pollStream(tt.calls)
			g := guards(func(g *Guards) { g.AnswerAware = tt.aware; g.CycleRepeats = 4 })
			r := replayLines(t, FormatClaude, g, s.lines)
			checkTripAt(t, r, tt.det, tt.tripAt, lines)
		})
	}
}

// call is one poll of the answer-aware tests: its signature (the "job"
// argument), its answer and whether the answer is an error.
type call struct {
	sig, answer string
	err         bool
}

// pollStream is a claude stream of "poll" calls, each answered as given; it
// returns the stream and the line of each call.
func pollStream(calls []call) (*stream, []int) {
	s := &stream{}
	var lines []int
	for _, c := range calls {
		id := s.id("toolu")
		s.add(cAssistant(s.id("msg"), []any{map[string]any{"type": "tool_use", "id": id, "name": "poll",
			"input": map[string]any{"job": c.sig}}}, "tool_use"))
		lines = append(lines, s.len())
		s.add(js(map[string]any{"type": "user", "parent_tool_use_id": nil, "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": c.answer, "is_error": c.err}}}}))
	}
	return s, lines
}

// checkTripAt checks that r tripped det once, at the tripAt-th call (lines
// holds each call's line), or not at all when tripAt is negative.
func checkTripAt(t *testing.T, r Report, det string, tripAt int, lines []int) {
	t.Helper()
	if tripAt < 0 {
		if len(r.Trips) != 0 {
			t.Fatalf("trips %s, want none", js(r.Trips))
		}
		return
	}
	if len(r.Trips) != 1 || r.Trips[0].Detector != det || r.Trips[0].Line != lines[tripAt] {
		t.Fatalf("trips %s, want %s at line %d", js(r.Trips), det, lines[tripAt])
	}
}
