package monitor

import (
	"fmt"
	"testing"
)

func TestRepeatedErrorsCheck(t *testing.T) {
	tests := []struct {
		r, streak int
		want      bool
	}{{6, 5, false}, {6, 6, true}, {6, 7, true}, {1, 1, true}, {0, 99, false}}
	for _, tt := range tests {
		reason, msg, failed := repeatedErrors(&State{Guards: Guards{ErrorRepeats: tt.r}, AgentCounters: AgentCounters{ErrorStreak: tt.streak}})
		if failed != tt.want {
			t.Errorf("r %d streak %d: failed=%v want %v", tt.r, tt.streak, failed, tt.want)
		}
		if failed && (reason != DetectorRepeatedErrors || msg != fmt.Sprintf("the same tool error %d times in a row", tt.r)) {
			t.Errorf("reason %q message %q", reason, msg)
		}
	}
}

// One answer per format, an error or not, with its text: the parsers hand
// the answer's text to the fold.
var errorAnswer = map[string]func(s *stream, i int, isErr bool, text string){
	FormatClaude: func(s *stream, i int, isErr bool, text string) {
		id := s.id("toolu")
		s.add(cAssistant(s.id("msg"), []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash",
			"input": map[string]any{"command": fmt.Sprintf("make %d", i)}}}, "tool_use"))
		s.add(js(map[string]any{"type": "user", "parent_tool_use_id": nil, "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isErr}}}}))
	},
	FormatPi: func(s *stream, i int, isErr bool, text string) {
		id := s.id("call")
		args := map[string]any{"command": fmt.Sprintf("make %d", i)}
		s.add(js(map[string]any{"type": "tool_execution_start", "toolCallId": id, "toolName": "bash", "args": args}),
			js(map[string]any{"type": "tool_execution_end", "toolCallId": id, "toolName": "bash",
				"result": map[string]any{"content": []any{piText(text)}}, "isError": isErr}))
	},
	FormatCodex: func(s *stream, i int, isErr bool, text string) {
		id := s.id("item")
		status := "completed"
		if isErr {
			status = "failed"
		}
		s.add(js(map[string]any{"type": "item.completed", "item": map[string]any{"id": id, "type": "command_execution",
			"command": fmt.Sprintf("make %d", i), "aggregated_output": text, "exit_code": 2, "status": status}}))
	},
	FormatOpencode: func(s *stream, i int, isErr bool, text string) {
		state := map[string]any{"status": "completed", "input": map[string]any{"command": i}, "output": text}
		if isErr {
			state = map[string]any{"status": "error", "input": map[string]any{"command": i}, "error": text}
		}
		s.add(js(map[string]any{"type": "tool_use", "part": map[string]any{"callID": s.id("call"), "tool": "bash", "state": state}}))
	},
	FormatGemini: func(s *stream, i int, isErr bool, text string) {
		id := s.id("tool")
		s.add(js(map[string]any{"type": "tool_use", "tool_name": "run_shell_command", "tool_id": id,
			"parameters": map[string]any{"command": i}}))
		res := map[string]any{"type": "tool_result", "tool_id": id, "status": "success", "output": text}
		if isErr {
			res = map[string]any{"type": "tool_result", "tool_id": id, "status": "error",
				"error": map[string]any{"type": "x", "message": text}}
		}
		s.add(js(res))
	},
}

func TestRepeatedErrorsFold(t *testing.T) {
	type ans struct {
		err  bool
		text string
	}
	same := ans{true, "error: no such file"}
	six := []ans{same, same, same, same, same, same}
	tests := []struct {
		name    string
		answers []ans
		trip    int // index of the tripping answer, -1 none
	}{
		{"six in a row trip at the sixth", six, 5},
		{"five do not", six[:5], -1},
		{"another text resets", []ans{same, same, same, {true, "error: permission denied"}, same, same, same, same, same}, -1},
		{"a success resets", []ans{same, same, same, same, same, {false, "error: no such file"}, same, same, same, same, same}, -1},
		{"counts again after a reset", []ans{same, {false, "ok"}, same, same, same, same, same, same}, 7},
	}
	for format, add := range errorAnswer {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				s := &stream{}
				var lines []int
				for i, a := range tt.answers {
					add(s, i, a.err, a.text)
					lines = append(lines, s.len())
				}
				g := guards(func(g *Guards) { g.IdenticalCalls = 0; g.SilentTurns = 0 })
				r := replayLines(t, format, g, s.lines)
				if tt.trip < 0 {
					if len(r.Trips) != 0 {
						t.Fatalf("trips %s, want none", js(r.Trips))
					}
					return
				}
				want := []Trip{{Class: ClassRunaway, Detector: DetectorRepeatedErrors, Message: "the same tool error 6 times in a row", Line: lines[tt.trip]}}
				if js(r.Trips) != js(want) {
					t.Fatalf("trips %s, want %s", js(r.Trips), js(want))
				}
			})
		}
	}
}

// A restated answer counts once: pi's tool_execution_end seen twice.
func TestRepeatedErrorsRestatedAnswer(t *testing.T) {
	s := &stream{}
	for i := range 3 {
		errorAnswer[FormatPi](s, i, true, "boom")
		s.add(s.lines[s.len()-1])
	}
	r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
	if len(r.Trips) != 0 {
		t.Fatalf("trips %s: three errors restated are three, not six", js(r.Trips))
	}
}
