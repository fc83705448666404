package monitor

import "turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"

// codex exec --json: ThreadEvents (openai/codex codex-rs exec
// exec_events.rs): thread.started, turn.started, turn.completed (usage,
// cumulative over the thread), turn.failed, error, and item.started /
// item.updated / item.completed wrapping one ThreadItem.
//
// codex has no deltas and no model message boundaries: each tool item
// (command_execution, file_change, mcp_tool_call, web_search,
// collab_tool_call) is one tool-only message, counted at the first sight of
// its id; each completed agent_message is one message that speaks.
// A completed reasoning item is a message of one whole thinking block (read
// for repetition); todo_list and error items carry nothing the detectors use.
// The stream names no model: usage is priced with the price table's
// defaultModel for codex.
//
// Older exec --json output (third-party recordings of codex 0.4x, not
// confirmed from codex's own source) names the session event
// session.created, the item's kind item_type, and the agent's text
// assistant_message; they read as thread.started (its session_id as
// thread_id), type and agent_message.
// item.plan.delta (plan-mode text), request_user_input (the model asking a
// user that exec does not have; not counted as a step, since how else exec
// reports that call is not confirmed) and the top-level error notice are
// ignored.
func parseCodex(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool {
	ev := c.ev
	switch string(typ) {
	case "item.started", "item.updated", "item.completed":
		return codexItem(s, o, string(typ) == "item.completed", ev)
	case "turn.started":
		ev.start = true
	case "turn.completed":
		ev.final, ev.stopByResult = true, true
		return codexUsage(s, o, ev)
	case "turn.failed": // the agent's own failure: {"error":{"message":..}}
		ev.final, ev.turnStop, ev.stopByResult, ev.failed = true, StopError, true, true
		for s.Into(o, "error") {
			var eo jsonscan.Obj
			for s.Find(&eo, "message") {
				ev.errText, _ = s.TextOrNull()
			}
		}
		return !s.Bad
	case "thread.started", "session.created": // session.created: an older exec --json
		ev.newSegment = true
		key := "thread_id" // the CLI's own session id (exec resume); the older event's session_id
		if string(typ) == "session.created" {
			key = "session_id"
		}
		for s.Find(o, key) {
			ev.sessionID = readSessionID(s)
		}
		return !s.Bad
	case "error": // {"message":..}: a notice, kept as the text of a turn.failed that names none
		ev.ignored = true
		for s.Find(o, "message") {
			ev.errNote, _ = s.TextOrNull()
		}
		return !s.Bad
	case "item.plan.delta", "request_user_input": // plan-mode text; the model asking the (absent) user
		ev.ignored = true
	default:
		return false
	}
	return s.SkipRest(o)
}

func codexUsage(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	for s.Into(o, "usage") {
		var u jsonscan.Obj
		var in, cached, out int64
		for s.Next(&u) {
			switch string(u.Key) {
			case "input_tokens":
				in, _ = s.Integer()
			case "cached_input_tokens":
				cached, _ = s.Integer()
			case "output_tokens":
				out, _ = s.Integer()
			default:
				s.Skip()
			}
		}
		if cached > in {
			cached = in
		}
		// input_tokens includes the cached ones.
		ev.costKind = costTokensTotal
		ev.toks = tokens{input: in - cached, cacheRead: cached, output: out}
	}
	return !s.Bad
}

// codexItem reads one ThreadItem.
func codexItem(s *jsonscan.Scanner, o *jsonscan.Obj, completed bool, ev *event) bool {
	var id, typ, tool, args, text, status, answer []byte
	for s.Into(o, "item") {
		var it jsonscan.Obj
		for s.Next(&it) {
			switch string(it.Key) {
			case "id":
				id, _ = s.Str()
			case "type", "item_type": // item_type: an older exec --json
				typ, _ = s.Str()
			case "tool":
				tool, _ = s.StrOrNull()
			case "command", "changes", "query", "arguments", "prompt": // one per item type
				args, _ = s.Value()
			case "text":
				text, _ = s.TextOrNull()
			case "status":
				status, _ = s.StrOrNull()
			case "aggregated_output", "result", "error": // the answer, one per item type
				if answer == nil || string(it.Key) == "error" {
					answer, _ = s.Value()
				} else {
					s.Skip()
				}
			default:
				s.Skip()
			}
		}
	}
	if s.Bad {
		return false
	}
	switch string(typ) {
	case "command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call":
		name := tool
		if len(name) == 0 {
			name = typ
		}
		ev.msgOpen, ev.msgEnd = true, true // one tool-only message, if the call is new
		ev.addCall(id, name, args, true)
		if completed { // codex marks a failed or declined item as an error
			ev.addAnswer(id, name, string(status) == "failed" || string(status) == "declined", answer)
		}
	case "agent_message", "assistant_message": // assistant_message: an older exec --json
		if completed {
			ev.msgOpen, ev.msgEnd = true, true
			ev.text, ev.hasText = text, true
		}
	case "reasoning": // a whole thinking block, its own message (it neither speaks nor calls)
		if completed {
			ev.msgOpen, ev.msgEnd = true, true
			ev.thinking, ev.hasThinking = text, true
		}
	case "todo_list", "error", "plan":
	default:
		return false // an item type this engine does not know
	}
	return true
}

// sniffCodex says whether a line is codex's, for auto (format.go).
func sniffCodex(typ string, _ []byte) bool {
	switch typ {
	case "thread.started", "turn.started", "turn.completed", "turn.failed",
		"item.started", "item.updated", "item.completed", "session.created", "item.plan.delta":
		return true
	}
	return false
}
