package monitor

import "testing"

func TestSilentRunCheck(t *testing.T) {
	tests := []struct {
		n, silent int
		nudged    bool
		want      bool
	}{
		{12, 12, false, false},
		{12, 13, false, true}, // the 13th tool-only message, inclusive
		{12, 14, false, true},
		{12, 13, true, false}, // said once per streak
		{0, 100, false, false},
	}
	for _, tt := range tests {
		reason, _, failed := silentRun(&State{Guards: Guards{SilentTurns: tt.n}, AgentCounters: AgentCounters{Silent: tt.silent, Nudged: tt.nudged}})
		if failed != tt.want || failed && reason != DetectorSilentRun {
			t.Errorf("n %d silent %d nudged %v: failed=%v reason %q, want %v", tt.n, tt.silent, tt.nudged, failed, reason, tt.want)
		}
	}
}

// Repetition is checked before silence: an agent doing both is stopped,
// not nudged, even when the 13th tool-only message is also the 4th
// identical call (one event: calls, then the nudge).
func TestRepetitionBeforeSilence(t *testing.T) {
	s := &stream{}
	for i := 0; i < 9; i++ {
		s.piToolOnly("bash", map[string]any{"command": s.id("echo")}, false)
	}
	for i := 0; i < 4; i++ {
		s.piToolOnly("bash", map[string]any{"command": "ls"}, false)
	}
	r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
	if len(r.Nudges) != 0 || len(r.Trips) != 1 || r.Trips[0].Detector != DetectorIdenticalCalls {
		t.Fatalf("trips %s nudges %s, want identicalCalls and no nudge", js(r.Trips), js(r.Nudges))
	}
}

// Model message boundaries per format: claude repeats a message id across
// lines (one message), codex counts each tool item as one tool-only
// message and each agent_message as one that speaks, opencode uses
// step_start..step_finish.
func TestSilentRunMessageBoundaries(t *testing.T) {
	g := guards(func(g *Guards) { g.SilentTurns = 2 })
	t.Run("claude repeated id is one message", func(t *testing.T) {
		var lines []string
		for i := 0; i < 3; i++ {
			id := itoa(i)
			blk := map[string]any{"type": "tool_use", "id": "t" + id, "name": "Bash", "input": map[string]any{"c": id}}
			lines = append(lines, cAssistant("m"+id, []any{blk}, nil), cAssistant("m"+id, []any{blk}, nil),
				cAssistant("m"+id, []any{blk}, "tool_use"), cToolResult("t"+id, false))
		}
		r := replayLines(t, FormatClaude, g, lines)
		if len(r.Nudges) != 1 || r.Nudges[0].Line != 12 {
			t.Fatalf("nudges %s, want one at the user line ending the 3rd message (12)", js(r.Nudges))
		}
	})
	t.Run("codex items", func(t *testing.T) {
		item := func(ev, id, typ string, extra map[string]any) string {
			it := map[string]any{"id": id, "type": typ}
			for k, v := range extra {
				it[k] = v
			}
			return js(map[string]any{"type": ev, "item": it})
		}
		cmd := func(id string) []string {
			return []string{item("item.started", id, "command_execution", map[string]any{"command": "ls " + id, "status": "in_progress"}),
				item("item.completed", id, "command_execution", map[string]any{"command": "ls " + id, "status": "completed", "exit_code": 0})}
		}
		lines := []string{`{"type":"turn.started"}`}
		lines = append(lines, cmd("i1")...)
		lines = append(lines, cmd("i2")...)
		lines = append(lines, item("item.completed", "i3", "agent_message", map[string]any{"text": "  "})) // whitespace: not speaking
		lines = append(lines, cmd("i4")...)                                                                // 3rd tool-only: nudge
		lines = append(lines, item("item.completed", "i5", "agent_message", map[string]any{"text": "ok"})) // speaks
		lines = append(lines, cmd("i6")...)
		lines = append(lines, cmd("i7")...)
		r := replayLines(t, FormatCodex, g, lines)
		if len(r.Nudges) != 1 || r.Nudges[0].Line != 7 || r.Steps != 5 {
			t.Fatalf("steps %d nudges %s, want 5 steps and one nudge at line 7", r.Steps, js(r.Nudges))
		}
	})
	t.Run("opencode steps", func(t *testing.T) {
		n := 0
		step := func(tool bool, text string) []string {
			n++
			l := []string{`{"type":"step_start","part":{"type":"step-start"}}`}
			if tool {
				l = append(l, js(map[string]any{"type": "tool_use", "part": map[string]any{"type": "tool", "callID": "c" + itoa(n), "tool": "bash",
					"state": map[string]any{"status": "completed", "input": map[string]any{"command": itoa(n)}}}}))
			}
			if text != "" {
				l = append(l, js(map[string]any{"type": "text", "part": map[string]any{"type": "text", "text": text}}))
			}
			return append(l, `{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","cost":0.001}}`)
		}
		var lines []string
		lines = append(lines, step(true, "")...)
		lines = append(lines, step(false, "")...) // neither
		lines = append(lines, step(true, "")...)
		lines = append(lines, step(true, "")...) // 3rd: nudge on its step_finish
		r := replayLines(t, FormatOpencode, g, lines)
		if len(r.Nudges) != 1 || r.Nudges[0].Line != len(lines) {
			t.Fatalf("nudges %s, want one at line %d", js(r.Nudges), len(lines))
		}
	})
}
