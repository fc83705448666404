package main

// gemini --output-format stream-json: init, the user message, assistant
// message chunks with delta: true, tool_use / tool_result, and a final
// result with stats. Every event has an ISO timestamp. The stream has one
// channel for model output, so the fake sends its thinking as assistant
// deltas too. No stop reason, no per-message usage.

var geminiTools = toolNames{shell: "run_shell_command", read: "read_file", grep: "search_file_content", edit: "replace", write: "write_file",
	command: "command", path: "file_path", pattern: "pattern", oldText: "old_string", newText: "new_string", content: "content"}

func renderGemini(s Script) string {
	e := newEmitter("gemini", s.Name)
	e.emit(obj{{"type", "init"}, {"timestamp", e.iso()}, {"session_id", e.uuid()}, {"model", "gemini-2.5-pro"}})
	e.emit(obj{{"type", "message"}, {"timestamp", e.iso()}, {"role", "user"}, {"content", s.Prompt}})
	start := e.t
	calls := 0
	for _, m := range s.Msgs {
		e.after(m.Wait)
		deltas(e, m, func(_ bool, _ int, d string) {
			e.emit(obj{{"type", "message"}, {"timestamp", e.iso()}, {"role", "assistant"}, {"content", d}, {"delta", true}})
		})
		for _, c := range m.Calls {
			calls++
			name, a := geminiTools.call(c)
			e.after(m.Every)
			id := name + "-" + itoa(int(e.ms())) + "-" + itoa(calls)
			e.emit(obj{{"type", "tool_use"}, {"timestamp", e.iso()}, {"tool_name", name}, {"tool_id", id}, {"parameters", a}})
			e.after(c.Took)
			status := "success"
			if c.Failed {
				status = "error"
			}
			e.emit(obj{{"type", "tool_result"}, {"timestamp", e.iso()}, {"tool_id", id}, {"status", status}, {"output", c.Output}})
		}
	}
	if s.Result {
		in, out := tokensIn(s), tokensOut(s)
		e.emit(obj{{"type", "result"}, {"timestamp", e.iso()}, {"status", "success"}, {"stats", obj{{"total_tokens", in + out},
			{"input_tokens", in}, {"output_tokens", out}, {"cached", 0}, {"input", in},
			{"duration_ms", e.t.Sub(start).Milliseconds()}, {"tool_calls", calls}}}})
	}
	return e.text()
}
