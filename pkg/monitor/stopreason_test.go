package monitor

import "testing"

// Claude Code 2.x lines with --include-partial-messages, as it prints them:
// stream_event wrappers of the Messages API stream, and assistant lines
// whose stop_reason is null. parent is "" for the main agent.
func cEvent(parent string, event map[string]any) string {
	var p any
	if parent != "" {
		p = parent
	}
	return js(map[string]any{"type": "stream_event", "event": event, "session_id": "s", "parent_tool_use_id": p})
}

func cStart(parent, id string) string {
	return cEvent(parent, map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
}

func cTextDelta(parent, text string) string {
	return cEvent(parent, map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text}})
}

func cMessageDelta(parent, stop string) string {
	return cEvent(parent, map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
}

// cAssistant2 is an assistant line of one agent with a given stop_reason (nil: null).
func cAssistant2(parent, id string, content []any, stop any) string {
	var p any
	if parent != "" {
		p = parent
	}
	return js(map[string]any{"type": "assistant", "session_id": "s", "parent_tool_use_id": p,
		"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}})
}

func cResultStop(stop string) string {
	return js(map[string]any{"type": "result", "subtype": "success", "is_error": false, "stop_reason": stop, "total_cost_usd": 0})
}

// TestStopReasonsPrecisely: the turn's stop reason is that of the main
// agent's last model message that ended (docs/design.md#stop-reasons).
// A claude message's is its assistant line's stop_reason when set, else its
// stream's message_delta's, else the result's for the last message; a
// subagent's messages never set it; a message cut off before its end has
// none. codex and gemini report error when the final result reports a
// failure, else "".
func TestStopReasonsPrecisely(t *testing.T) {
	text := []any{map[string]any{"type": "text", "text": "hi"}}
	task := []any{map[string]any{"type": "tool_use", "id": "toolu_task", "name": "Task", "input": map[string]any{"prompt": "go"}}}
	var pi stream
	pi.piToolOnly("read", map[string]any{"path": "a"}, false)
	pi.piDelta("text", "half a sent", 0)
	tests := []struct {
		name, format string
		lines        []string
		stop         string
	}{
		{"claude 2.x: null on the line, the stream's message_delta", FormatClaude, []string{cInit(),
			cStart("", "m1"), cTextDelta("", "hi"), cAssistant2("", "m1", text, nil), cMessageDelta("", "max_tokens"), cResultStop("end_turn")},
			StopLength},
		{"the assistant line's stop_reason wins over message_delta", FormatClaude, []string{cInit(),
			cStart("", "m1"), cMessageDelta("", "max_tokens"), cAssistant2("", "m1", text, "end_turn"), cResult(0)}, StopEnd},
		{"whatever their order", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", text, "end_turn"), cMessageDelta("", "max_tokens"), cResult(0)}, StopEnd},
		{"without either, the result's for the last message", FormatClaude, []string{cInit(),
			cAssistant2("", "m1", text, nil), cResultStop("max_tokens")}, StopLength},
		{"the result's does not replace the last message's", FormatClaude, []string{cInit(),
			cAssistant2("", "m1", text, "tool_use"), cResultStop("end_turn")}, StopToolUse},
		{"a message ended by a user line keeps its stop", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", text, nil), cMessageDelta("", "max_tokens"),
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"Output token limit hit."}]},"parent_tool_use_id":null}`,
			cResultStop("end_turn")}, StopLength},
		{"a subagent's later message never sets it", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", task, nil), cMessageDelta("", "tool_use"),
			cStart("toolu_task", "s1"), cTextDelta("toolu_task", "sub"), cAssistant2("toolu_task", "s1", text, nil),
			cMessageDelta("toolu_task", "max_tokens")}, StopToolUse},
		{"a subagent's message ended by the result never sets it", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", task, nil), cMessageDelta("", "tool_use"),
			cAssistant2("toolu_task", "s1", text, "max_tokens"), cResultStop("")}, StopToolUse},
		{"claude cut off before message_delta", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", task, nil), cMessageDelta("", "tool_use"), cToolResult("toolu_task", false),
			cStart("", "m2"), cTextDelta("", "Partial text then stall"), cAssistant2("", "m2", text, nil)}, ""},
		{"claude cut off after message_delta: it ended", FormatClaude, []string{cInit(),
			cStart("", "m1"), cAssistant2("", "m1", task, nil), cMessageDelta("", "tool_use")}, StopToolUse},
		{"pi cut off mid-message", FormatPi, append([]string{`{"type":"agent_start"}`}, pi.lines...), ""},
		{"codex failed", FormatCodex, []string{`{"type":"turn.started"}`, `{"type":"turn.failed","error":{"message":"boom"}}`}, StopError},
		{"codex completed", FormatCodex, []string{`{"type":"turn.started"}`, `{"type":"turn.completed","usage":{}}`}, ""},
		{"codex failed, then a turn that completed", FormatCodex, []string{`{"type":"turn.started"}`,
			`{"type":"turn.failed","error":{"message":"boom"}}`, `{"type":"turn.started"}`, `{"type":"turn.completed","usage":{}}`}, ""},
		{"gemini error result", FormatGemini, []string{gInit, gUser, gSpeak,
			`{"type":"result","status":"error","error":{"type":"x","message":"boom"}}`}, StopError},
		{"gemini success", FormatGemini, []string{gInit, gUser, gSpeak, gResult}, ""},
		{"gemini error, then a run that succeeded", FormatGemini, []string{gInit, gUser,
			`{"type":"result","status":"error","error":{"type":"x","message":"boom"}}`, gInit, gUser, gSpeak, gResult}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if r.StopReason != tt.stop || r.Unparsed != 0 {
				t.Errorf("stop reason %q (unparsed %d), want %q", r.StopReason, r.Unparsed, tt.stop)
			}
		})
	}
}
