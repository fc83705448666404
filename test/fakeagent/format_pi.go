package main

// pi --mode json: every message_update restates the whole partial message,
// usage.cost.total is per message, tools run between message_end and turn_end.

var piTools = toolNames{shell: "bash", read: "read", grep: "grep", edit: "edit", write: "write",
	command: "command", path: "path", pattern: "pattern", oldText: "oldText", newText: "newText", content: "content"}

func piStop(s string) string {
	switch s {
	case "end":
		return "stop"
	case "tool_use":
		return "toolUse"
	}
	return s
}

func piUsage(m Msg, zero bool) obj {
	if zero {
		m = Msg{CostUSD: "0"}
	}
	in, out := splitCost(m)
	return obj{{"input", m.In}, {"output", m.Out}, {"cacheRead", 0}, {"cacheWrite", 0}, {"totalTokens", m.In + m.Out},
		{"cost", obj{{"input", costNum(in)}, {"output", costNum(out)}, {"cacheRead", 0}, {"cacheWrite", 0}, {"total", costNum(m.CostUSD)}}}}
}

func piAssistant(m Msg, content []any, zero bool, ts int64) obj {
	return obj{{"role", "assistant"}, {"content", content}, {"api", "anthropic-messages"}, {"provider", "anthropic"},
		{"model", "claude-sonnet-4-5"}, {"usage", piUsage(m, zero)}, {"stopReason", piStop(m.Stop)}, {"timestamp", ts}}
}

func renderPi(s Script) string {
	e := newEmitter("pi", s.Name)
	user := obj{{"role", "user"}, {"content", []any{obj{{"type", "text"}, {"text", s.Prompt}}}}, {"timestamp", e.ms()}}
	e.emit(obj{{"type", "agent_start"}})
	e.emit(obj{{"type", "turn_start"}})
	e.emit(obj{{"type", "message_start"}, {"message", user}})
	e.emit(obj{{"type", "message_end"}, {"message", user}})
	all := []any{user}
	for i, m := range s.Msgs {
		if i > 0 {
			e.emit(obj{{"type", "turn_start"}})
		}
		final, results := piMessage(e, m)
		all = append(all, final)
		all = append(all, results...)
		e.emit(obj{{"type", "turn_end"}, {"message", final}, {"toolResults", nonNil(results)}})
	}
	if s.Result {
		e.emit(obj{{"type", "agent_end"}, {"messages", all}})
	}
	return e.text()
}

// piMessage emits one assistant message with its partials and its tool runs,
// and returns the final message and the tool results.
func piMessage(e *emitter, m Msg) (obj, []any) {
	e.after(m.Wait)
	ts := e.ms()
	var content []any
	update := func(ev obj) {
		p := piAssistant(m, clone(content), false, ts)
		e.emit(obj{{"type", "message_update"}, {"message", p}, {"assistantMessageEvent", append(ev, kv{"partial", p})}})
	}
	e.emit(obj{{"type", "message_start"}, {"message", piAssistant(m, []any{}, true, ts)}})
	idx := -1
	var cur string
	deltas(e, m, func(thinking bool, i int, d string) {
		kind, field := "text", "text"
		if thinking {
			kind, field = "thinking", "thinking"
		}
		if i == 0 {
			idx = len(content)
			cur = ""
			content = append(content, obj{{"type", kind}, {field, ""}})
			update(obj{{"type", kind + "_start"}, {"contentIndex", idx}})
		}
		cur += d
		content[idx] = obj{{"type", kind}, {field, cur}}
		update(obj{{"type", kind + "_delta"}, {"contentIndex", idx}, {"delta", d}})
		if (thinking && i == len(m.Thinking)-1) || (!thinking && i == len(m.Text)-1) {
			update(obj{{"type", kind + "_end"}, {"contentIndex", idx}, {"content", cur}})
		}
	})
	type run struct {
		id, name string
		args     raw
		c        Call
	}
	var runs []run
	for _, c := range m.Calls {
		name, a := piTools.call(c)
		r := run{e.id("toolu_"), name, a, c}
		runs = append(runs, r)
		e.after(m.Every)
		idx := len(content)
		content = append(content, obj{{"type", "toolCall"}, {"id", r.id}, {"name", name}, {"arguments", obj{}}})
		update(obj{{"type", "toolcall_start"}, {"contentIndex", idx}})
		update(obj{{"type", "toolcall_delta"}, {"contentIndex", idx}, {"delta", string(a)}})
		call := obj{{"type", "toolCall"}, {"id", r.id}, {"name", name}, {"arguments", a}}
		content[idx] = call
		update(obj{{"type", "toolcall_end"}, {"contentIndex", idx}, {"toolCall", call}})
	}
	final := piAssistant(m, clone(content), false, ts)
	e.emit(obj{{"type", "message_end"}, {"message", final}})
	var results []any
	for _, r := range runs {
		e.emit(obj{{"type", "tool_execution_start"}, {"toolCallId", r.id}, {"toolName", r.name}, {"args", r.args}})
		e.after(r.c.Took)
		res := obj{{"content", []any{obj{{"type", "text"}, {"text", r.c.Output}}}}, {"details", obj{}}}
		e.emit(obj{{"type", "tool_execution_end"}, {"toolCallId", r.id}, {"toolName", r.name}, {"result", res}, {"isError", r.c.Failed}})
		tr := obj{{"role", "toolResult"}, {"toolCallId", r.id}, {"toolName", r.name},
			{"content", []any{obj{{"type", "text"}, {"text", r.c.Output}}}}, {"isError", r.c.Failed}, {"timestamp", e.ms()}}
		e.emit(obj{{"type", "message_start"}, {"message", tr}})
		e.emit(obj{{"type", "message_end"}, {"message", tr}})
		results = append(results, tr)
	}
	return final, results
}

func clone(c []any) []any { return append([]any{}, c...) }

func nonNil(c []any) []any {
	if c == nil {
		return []any{}
	}
	return c
}
