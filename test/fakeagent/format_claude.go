package main

import "time"

// claude -p --output-format stream-json --verbose --include-partial-messages:
// partials arrive as stream_event lines (the Messages API stream), then one
// assistant line with the whole message; tool results come back as user
// lines; the cost only on the final result (total_cost_usd).

var claudeTools = toolNames{shell: "Bash", read: "Read", grep: "Grep", edit: "Edit", write: "Write",
	command: "command", path: "file_path", pattern: "pattern", oldText: "old_string", newText: "new_string", content: "content"}

const claudeModel = "claude-sonnet-4-5-20250929"

func claudeStop(s string) string {
	if s == "length" {
		return "max_tokens"
	}
	if s == "end" {
		return "end_turn"
	}
	return s
}

func renderClaude(s Script) string {
	e := newEmitter("claude", s.Name)
	session := e.uuid()
	e.emit(obj{{"type", "system"}, {"subtype", "init"}, {"cwd", "/workspace"}, {"session_id", session},
		{"tools", []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write"}}, {"mcp_servers", []any{}},
		{"model", claudeModel}, {"permissionMode", "bypassPermissions"}, {"apiKeySource", "none"},
		{"claude_code_version", "2.1.7"}, {"output_style", "default"}, {"uuid", e.uuid()}})
	start := e.t
	for _, m := range s.Msgs {
		claudeMessage(e, session, m)
	}
	if !s.Result {
		return e.text()
	}
	e.after(50 * time.Millisecond)
	dur := e.t.Sub(start).Milliseconds()
	e.emit(obj{{"type", "result"}, {"subtype", "success"}, {"is_error", false}, {"duration_ms", dur},
		{"duration_api_ms", dur * 9 / 10}, {"num_turns", len(s.Msgs)}, {"result", lastText(s)}, {"session_id", session},
		{"total_cost_usd", costNum(sumCost(s))},
		{"usage", obj{{"input_tokens", tokensIn(s)}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0},
			{"output_tokens", tokensOut(s)}, {"service_tier", "standard"}}},
		{"permission_denials", []any{}}, {"uuid", e.uuid()}})
	return e.text()
}

func claudeMessage(e *emitter, session string, m Msg) {
	e.after(m.Wait)
	id := e.id("msg_01")
	stream := func(ev obj) {
		e.emit(obj{{"type", "stream_event"}, {"event", ev}, {"session_id", session}, {"parent_tool_use_id", nil}, {"uuid", e.uuid()}})
	}
	stream(obj{{"type", "message_start"}, {"message", obj{{"id", id}, {"type", "message"}, {"role", "assistant"},
		{"model", claudeModel}, {"content", []any{}}, {"stop_reason", nil}, {"stop_sequence", nil},
		{"usage", obj{{"input_tokens", m.In}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}, {"output_tokens", 1}}}}}})
	var blocks []any
	idx := -1
	var cur string
	deltas(e, m, func(thinking bool, i int, d string) {
		kind, field, dt := "text", "text", "text_delta"
		if thinking {
			kind, field, dt = "thinking", "thinking", "thinking_delta"
		}
		if i == 0 {
			idx++
			cur = ""
			start := obj{{"type", kind}, {field, ""}}
			if thinking {
				start = append(start, kv{"signature", ""})
			}
			stream(obj{{"type", "content_block_start"}, {"index", idx}, {"content_block", start}})
		}
		cur += d
		stream(obj{{"type", "content_block_delta"}, {"index", idx}, {"delta", obj{{"type", dt}, {field, d}}}})
		if (thinking && i == len(m.Thinking)-1) || (!thinking && i == len(m.Text)-1) {
			if thinking {
				stream(obj{{"type", "content_block_delta"}, {"index", idx}, {"delta", obj{{"type", "signature_delta"}, {"signature", "c2lnbmF0dXJl"}}}})
				blocks = append(blocks, obj{{"type", "thinking"}, {"thinking", cur}, {"signature", "c2lnbmF0dXJl"}})
			} else {
				blocks = append(blocks, obj{{"type", "text"}, {"text", cur}})
			}
			stream(obj{{"type", "content_block_stop"}, {"index", idx}})
		}
	})
	type run struct {
		id string
		c  Call
	}
	var runs []run
	for _, c := range m.Calls {
		name, a := claudeTools.call(c)
		r := run{e.id("toolu_01"), c}
		runs = append(runs, r)
		idx++
		e.after(m.Every)
		stream(obj{{"type", "content_block_start"}, {"index", idx}, {"content_block", obj{{"type", "tool_use"}, {"id", r.id}, {"name", name}, {"input", obj{}}}}})
		stream(obj{{"type", "content_block_delta"}, {"index", idx}, {"delta", obj{{"type", "input_json_delta"}, {"partial_json", string(a)}}}})
		stream(obj{{"type", "content_block_stop"}, {"index", idx}})
		blocks = append(blocks, obj{{"type", "tool_use"}, {"id", r.id}, {"name", name}, {"input", a}})
	}
	stream(obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", claudeStop(m.Stop)}, {"stop_sequence", nil}}}, {"usage", obj{{"output_tokens", m.Out}}}})
	stream(obj{{"type", "message_stop"}})
	e.emit(obj{{"type", "assistant"}, {"message", obj{{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", claudeModel},
		{"content", nonNil(blocks)}, {"stop_reason", claudeStop(m.Stop)}, {"stop_sequence", nil},
		{"usage", obj{{"input_tokens", m.In}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}, {"output_tokens", m.Out}, {"service_tier", "standard"}}}}},
		{"parent_tool_use_id", nil}, {"session_id", session}, {"uuid", e.uuid()}})
	for _, r := range runs {
		e.after(r.c.Took)
		e.emit(obj{{"type", "user"}, {"message", obj{{"role", "user"}, {"content", []any{obj{{"tool_use_id", r.id}, {"type", "tool_result"},
			{"content", r.c.Output}, {"is_error", r.c.Failed}}}}}}, {"parent_tool_use_id", nil}, {"session_id", session}, {"uuid", e.uuid()}})
	}
}
