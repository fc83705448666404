package monitor

import (
	"fmt"
	"testing"
)

// cSub is a claude line of a subagent (parent "" is the main agent).
func cSub(parent, msgID, callID, name string, input any) string {
	var p any
	if parent != "" {
		p = parent
	}
	return js(map[string]any{"type": "assistant", "parent_tool_use_id": p, "message": map[string]any{"id": msgID, "role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": callID, "name": name, "input": input}}, "stop_reason": "tool_use",
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 20}}})
}

func cSubResult(parent, callID, text string, isErr bool) string {
	var p any
	if parent != "" {
		p = parent
	}
	return js(map[string]any{"type": "user", "parent_tool_use_id": p, "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": callID, "content": text, "is_error": isErr}}}})
}

// Subagents are judged apart: two of them side by side neither fake nor
// hide a streak, and steps count every agent's calls.
func TestSubagentStreaks(t *testing.T) {
	type call struct {
		agent string // "" main, else the parent tool id
		arg   string
		err   bool
	}
	tests := []struct {
		name   string
		calls  []call
		g      Guards
		tripAt int
		det    string
	}{
		// A and B each call grep x twice, interleaved: the shared stream
		// shows four in a row, which is no agent's streak.
		{"interleaved calls fake no streak", []call{{"A", "x", false}, {"B", "x", false}, {"A", "x", false}, {"B", "x", false}}, DefaultGuards(), -1, ""},
		// A repeats itself four times while B works: the stream alternates,
		// which would hide A's streak.
		{"interleaved calls hide no streak", []call{{"A", "x", false}, {"B", "1", false}, {"A", "x", false}, {"B", "2", false},
			{"A", "x", false}, {"B", "3", false}, {"A", "x", false}}, DefaultGuards(), 6, DetectorIdenticalCalls},
		{"the main agent too", []call{{"", "x", false}, {"A", "1", false}, {"", "x", false}, {"A", "2", false},
			{"", "x", false}, {"", "x", false}}, DefaultGuards(), 5, DetectorIdenticalCalls},
		{"repeated errors per agent", []call{{"A", "1", true}, {"B", "1", true}, {"A", "2", true}, {"B", "2", true},
			{"A", "3", true}, {"B", "3", true}}, guards(func(g *Guards) { g.ErrorRepeats = 3 }), 4, DetectorRepeatedErrors},
		{"steps count every agent", []call{{"A", "1", false}, {"B", "2", false}, {"", "3", false}},
			guards(func(g *Guards) { g.StepBudget = 2 }), 2, DetectorStepBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			s.add(cInit())
			var lines []int
			for i, c := range tt.calls {
				id := s.id("toolu")
				s.add(cSub(c.agent, s.id("msg"), id, "Grep", map[string]any{"q": c.arg}))
				lines = append(lines, s.len())
				text := "error: " + c.agent // the same text per agent
				if !c.err {
					text = fmt.Sprint("found ", i)
				}
				s.add(cSubResult(c.agent, id, text, c.err))
			}
			r := replayLines(t, FormatClaude, tt.g, s.lines)
			if tt.tripAt < 0 {
				if len(r.Trips) != 0 {
					t.Fatalf("trips %s, want none", js(r.Trips))
				}
				return
			}
			line := lines[tt.tripAt]
			if tt.det == DetectorRepeatedErrors {
				line++ // judged on the answer
			}
			if len(r.Trips) != 1 || r.Trips[0].Detector != tt.det || r.Trips[0].Line != line {
				t.Fatalf("trips %s, want %s at line %d", js(r.Trips), tt.det, line)
			}
		})
	}
}

// A subagent's line never ends the main agent's open message, and the
// silent run is counted per agent.
func TestSubagentMessages(t *testing.T) {
	g := guards(func(g *Guards) { g.SilentTurns = 2 })
	s := &stream{}
	s.add(cInit())
	// The main agent's message m0 stays open across the subagents' lines;
	// each subagent makes two tool-only messages: nobody reaches 3.
	s.add(cSub("", "m0", "t0", "Task", map[string]any{"p": "a"}))
	for i := range 2 {
		for _, a := range []string{"A", "B"} {
			id := s.id("toolu")
			s.add(cSub(a, s.id("msg"), id, "Read", map[string]any{"f": i}), cSubResult(a, id, "ok", false))
		}
	}
	s.add(cSub("", "m0", "t1", "Task", map[string]any{"p": "b"}))
	s.add(cResult(0.5))
	r := replayLines(t, FormatClaude, g, s.lines)
	if len(r.Nudges) != 0 || len(r.Trips) != 0 || r.Steps != 6 || !r.Result {
		t.Fatalf("report %s: want no nudge, 6 steps, a result", js(r))
	}
	// A third tool-only message of one subagent is its 3rd: nudged.
	s2 := &stream{}
	s2.add(cInit())
	for i := range 3 {
		for _, a := range []string{"A", "B"} {
			if a == "B" && i == 2 {
				continue
			}
			id := s2.id("toolu")
			s2.add(cSub(a, s2.id("msg"), id, "Read", map[string]any{"f": i}), cSubResult(a, id, "ok", false))
		}
	}
	r = replayLines(t, FormatClaude, g, s2.lines)
	if len(r.Nudges) != 1 {
		t.Fatalf("nudges %s, want one for A's third silent message", js(r.Nudges))
	}
}

// More subagents than slots: the oldest is forgotten, memory stays flat,
// and nothing trips on the churn.
func TestSubagentEviction(t *testing.T) {
	s := &stream{}
	s.add(cInit())
	for i := range 100 {
		a := fmt.Sprint("task", i%20)
		id := s.id("toolu")
		s.add(cSub(a, s.id("msg"), id, "Read", map[string]any{"f": i}), cSubResult(a, id, "ok", false))
	}
	s.add(cResult(1))
	r := replayLines(t, FormatClaude, DefaultGuards(), s.lines)
	if len(r.Trips) != 0 || r.Steps != 100 || r.CostUSD != "1.00" {
		t.Fatalf("report %s", js(r))
	}
}
