package monitor

import "turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"

// gemini --output-format stream-json (google-gemini/gemini-cli
// packages/core/src/output/types.ts JsonStreamEvent, emitted by
// packages/cli/src/nonInteractiveCli.ts): init (session_id, model),
// message (role, content, delta), tool_use (tool_name, tool_id,
// parameters), tool_result (tool_id, status success|error, output, error),
// error (severity, message), result (status, error, stats). Every event
// has a timestamp.
//
// Gemini has no message ids or message end events: a model message is the
// run of assistant messages and tool_use events of one model call, ended by
// the next tool_result, user message or result. An error event directly
// before the result is the CLI's own stop
// (docs/design.md#a-failure-the-agent-reports). Assistant messages with
// delta true are the deltas. result is the final result event; its stats
// are cumulative token counts for the session, priced by the init model.
func parseGemini(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool {
	ev := c.ev
	var role, content, model, toolName, toolID, params, status, message, errMsg, output, session []byte
	delta := false
	var in, cached, out int64
	hasStats := false
	for s.Next(o) {
		switch string(o.Key) {
		case "role":
			role, _ = s.Str()
		case "content":
			content, _ = s.TextOrNull()
		case "delta":
			delta, _ = s.Boolean()
		case "model":
			model, _ = s.StrOrNull()
		case "tool_name":
			toolName, _ = s.Str()
		case "tool_id":
			toolID, _ = s.Str()
		case "parameters":
			params, _ = s.Value()
		case "output": // tool_result
			output, _ = s.Value()
		case "status":
			status, _ = s.Str()
		case "stats":
			in, cached, out = readGeminiStats(s)
			hasStats = true
		case "message": // error events
			message, _ = s.TextOrNull()
		case "error": // result and tool_result: {"type":..,"message":..}
			errMsg = readGeminiError(s)
		case "session_id": // init: the CLI's own session id
			session = readSessionID(s)
		default:
			s.Skip()
		}
	}
	if s.Bad {
		return false
	}
	switch string(typ) {
	case "init":
		ev.start, ev.newSegment, ev.model = true, true, model
		ev.sessionID = session
	case "message":
		if string(role) != "assistant" {
			ev.endBefore = true
			break
		}
		ev.msgOpen = true
		if delta {
			ev.delta, ev.hasDelta, ev.deltaText = content, true, true
		} else {
			ev.text, ev.hasText = content, true
		}
	case "tool_use":
		ev.msgOpen = true
		ev.addCall(toolID, toolName, params, true)
	case "tool_result":
		ev.endBefore = true
		answer := output
		if string(status) == "error" && errMsg != nil {
			answer = errMsg
		}
		ev.addAnswer(toolID, nil, string(status) == "error", answer)
	case "result":
		ev.endBefore, ev.final, ev.stopByResult = true, true, true
		if hasStats {
			ev.costKind = costTokensTotal
			ev.toks = tokens{input: in, cacheRead: cached, output: out}
		}
		if string(status) == "error" {
			ev.turnStop, ev.failed, ev.errText = StopError, true, errMsg
		}
	case "error": // a warning or error notice (severity warning|error)
		// It is the failure's text when the result names none; when nothing
		// but the result follows it, it is the CLI stopping its own turn
		// ("Loop detected, stopping execution", "Maximum session turns
		// exceeded"), a failure even under a success result (Engine.cliStop).
		// Until then it is a notice that carries nothing.
		ev.ignored, ev.cliStop = true, true
		ev.errNote = message
	default:
		return false
	}
	return true
}

// readGeminiError reads the message of an error object.
func readGeminiError(s *jsonscan.Scanner) []byte {
	if !s.Object() {
		return nil
	}
	var o jsonscan.Obj
	var msg []byte
	for s.Find(&o, "message") {
		msg, _ = s.TextOrNull()
	}
	return msg
}

// readGeminiStats reads StreamStats into non-cached input, cached input
// and output tokens. input_tokens counts the cached ones too; later CLIs
// break it down into input (non-cached) and cached, Gemini CLI 0.11 writes
// only total_tokens, input_tokens, output_tokens, duration_ms, tool_calls.
func readGeminiStats(s *jsonscan.Scanner) (in, cached, out int64) {
	if !s.Object() {
		return
	}
	var o jsonscan.Obj
	var total, plain int64
	hasPlain := false
	for s.Next(&o) {
		switch string(o.Key) {
		case "input_tokens":
			total, _ = s.Integer()
		case "input":
			plain, _ = s.Integer()
			hasPlain = true
		case "cached":
			cached, _ = s.Integer()
		case "output_tokens":
			out, _ = s.Integer()
		default:
			s.Skip()
		}
	}
	if hasPlain {
		return plain, cached, out
	}
	cached = min(cached, total)
	return total - cached, cached, out
}

// sniffGemini says whether a line is gemini's, for auto (format.go): its
// tool_use carries "tool_name", its result "status" or "stats".
func sniffGemini(typ string, line []byte) bool {
	switch typ {
	case "init", "message", "tool_result":
		return true
	case "tool_use":
		return topHas(line, "tool_name")
	case "result":
		return topHas(line, "status") || topHas(line, "stats")
	}
	return false
}
