package main

import "strings"

// codex exec --json: no deltas; items bracket each command (item.started,
// item.completed); reasoning and agent messages arrive whole; the token usage
// on turn.completed is cumulative over the thread; no cost, no stop reason.

func renderCodex(s Script) string {
	e := newEmitter("codex", s.Name)
	e.emit(obj{{"type", "thread.started"}, {"thread_id", e.uuid()}})
	e.emit(obj{{"type", "turn.started"}})
	item := 0
	next := func() string { item++; return "item_" + itoa(item-1) }
	for _, m := range s.Msgs {
		e.after(m.Wait)
		think, talk := splitGen(m)
		if len(m.Thinking) > 0 {
			e.after(think)
			e.emit(obj{{"type", "item.completed"}, {"item", obj{{"id", next()}, {"type", "reasoning"}, {"text", strings.TrimSpace(m.thinking())}}}})
		}
		e.after(talk)
		if m.speaks() {
			e.emit(obj{{"type", "item.completed"}, {"item", obj{{"id", next()}, {"type", "agent_message"}, {"text", m.text()}}}})
		}
		for _, c := range m.Calls {
			e.after(m.Every)
			codexCall(e, next(), c)
		}
	}
	if s.Result {
		e.emit(obj{{"type", "turn.completed"}, {"usage", obj{{"input_tokens", tokensIn(s)}, {"cached_input_tokens", 0}, {"output_tokens", tokensOut(s)}}}})
	}
	return e.text()
}

func codexCall(e *emitter, id string, c Call) {
	if c.Kind == Edit || c.Kind == Write {
		kind := "update"
		if c.Kind == Write {
			kind = "add"
		}
		e.after(c.Took)
		e.emit(obj{{"type", "item.completed"}, {"item", obj{{"id", id}, {"type", "file_change"},
			{"changes", []any{obj{{"path", c.Path}, {"kind", kind}}}}, {"status", "completed"}}}})
		return
	}
	cmd := shellLine(c)
	e.emit(obj{{"type", "item.started"}, {"item", obj{{"id", id}, {"type", "command_execution"}, {"command", cmd},
		{"aggregated_output", ""}, {"exit_code", nil}, {"status", "in_progress"}}}})
	e.after(c.Took)
	code, status := 0, "completed"
	if c.Failed || (c.Kind == Grep && c.Output == "") {
		code, status = 1, "failed"
	}
	e.emit(obj{{"type", "item.completed"}, {"item", obj{{"id", id}, {"type", "command_execution"}, {"command", cmd},
		{"aggregated_output", c.Output}, {"exit_code", code}, {"status", status}}}})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
