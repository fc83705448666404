package main

// opencode run --format json: one step (step_start .. step_finish) per model
// message; text parts and tool parts arrive whole (a tool only once it
// completed); step_finish carries the step's cost and tokens. No deltas, so
// no thinking either.

var opencodeTools = toolNames{shell: "bash", read: "read", grep: "grep", edit: "edit", write: "write",
	command: "command", path: "filePath", pattern: "pattern", oldText: "oldString", newText: "newString", content: "content"}

func opencodeReason(s string) string {
	switch s {
	case "end":
		return "stop"
	case "tool_use":
		return "tool-calls"
	}
	return s
}

func renderOpencode(s Script) string {
	e := newEmitter("opencode", s.Name)
	session := e.id("ses_")
	for _, m := range s.Msgs {
		e.after(m.Wait)
		msg := e.id("msg_")
		ev := func(typ string, part obj) {
			e.emit(obj{{"type", typ}, {"timestamp", e.ms()}, {"sessionID", session},
				{"part", append(obj{{"id", e.id("prt_")}, {"sessionID", session}, {"messageID", msg}}, part...)}})
		}
		ev("step_start", obj{{"type", "step-start"}, {"snapshot", e.id("snap")}})
		t0 := e.ms()
		e.after(genTime(m))
		if m.speaks() {
			ev("text", obj{{"type", "text"}, {"text", m.text()}, {"time", obj{{"start", t0}, {"end", e.ms()}}}})
		}
		for _, c := range m.Calls {
			name, a := opencodeTools.call(c)
			call := e.id("call_")
			e.after(m.Every)
			start := e.ms()
			e.after(c.Took)
			exit := 0
			if c.Failed {
				exit = 1
			}
			title := c.Path + c.Command + c.Pattern
			ev("tool_use", obj{{"type", "tool"}, {"callID", call}, {"tool", name}, {"state", obj{{"status", "completed"},
				{"input", a}, {"output", c.Output}, {"title", title},
				{"metadata", obj{{"output", c.Output}, {"exit", exit}, {"description", title}}},
				{"time", obj{{"start", start}, {"end", e.ms()}}}}}})
		}
		ev("step_finish", obj{{"type", "step-finish"}, {"reason", opencodeReason(m.Stop)}, {"snapshot", e.id("snap")},
			{"cost", costNum(m.CostUSD)}, {"tokens", obj{{"input", m.In}, {"output", m.Out}, {"reasoning", 0},
				{"cache", obj{{"read", 0}, {"write", 0}}}}}})
	}
	return e.text()
}
