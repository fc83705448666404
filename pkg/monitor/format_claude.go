package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// claude -p --output-format stream-json --verbose [--include-partial-messages]:
// one SDK message per line (system, assistant, user, result, and with
// partial messages stream_event wrapping the Messages API stream events).
//
//   - system/init reopens the turn and starts a new session (cost); other
//     system subtypes (task_started, task_progress, task_notification, ...)
//     and rate_limit_event are notices that carry nothing: ignored.
//   - assistant lines carry complete content blocks of one message; the
//     CLI may emit several lines with the same message id (one per block),
//     so a model message is a message id, ended by a new id, a user line,
//     result, or the end of input. Its usage is replaced, not summed, and
//     priced by message.model; its stop_reason (when not null) is read here.
//     Claude Code 2.x prints stop_reason null there: then the stop is its
//     stream's message_delta stop_reason, else the result's stop_reason
//     when this was the last message (docs/design.md#stop-reasons).
//   - user lines end the model message and carry tool_result blocks.
//   - result is the final result event; total_cost_usd replaces the
//     session's priced estimate unless it is lower (docs/design.md#a-cost-never-goes-down).
//   - stream_event: content_block_start of a tool_use is a step at first
//     sight; content_block_delta text_delta/thinking_delta are the deltas;
//     message_start/message_delta usage updates the message's tokens;
//     message_delta ends the message's API stream with its stop_reason.
func parseClaude(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool {
	ev := c.ev
	switch string(typ) {
	case "assistant":
		return claudeAssistant(s, o, ev)
	case "user":
		ev.endBefore = true
		return claudeUser(s, o, ev)
	case "result":
		ev.endBefore, ev.final = true, true
		return claudeResult(s, o, ev)
	case "system":
		return claudeSystem(s, o, ev)
	case "stream_event":
		return claudeStreamEvent(s, o, ev)
	case "rate_limit_event": // the CLI's rate-limit notice (2.1.x): carries nothing
		ev.ignored = true
		return s.SkipRest(o)
	}
	return false
}

func claudeSystem(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	var subtype, model, session []byte
	for s.Next(o) {
		switch string(o.Key) {
		case "subtype":
			subtype, _ = s.Str()
		case "model":
			model, _ = s.StrOrNull()
		case "session_id": // on every line; the CLI's own session id is init's
			session = readSessionID(s)
		default:
			s.Skip()
		}
	}
	if string(subtype) == "init" {
		ev.start, ev.newSegment, ev.model = true, true, model
		ev.sessionID = session
	} else { // task_started, task_progress, task_notification, compact_boundary, ...: notices
		ev.ignored = true
	}
	return !s.Bad
}

func claudeAssistant(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	for s.Next(o) {
		if claudeParent(s, o, ev) {
			continue
		}
		if string(o.Key) != "message" {
			s.Skip()
			continue
		}
		if !s.Enter() {
			return false
		}
		var m jsonscan.Obj
		for s.Next(&m) {
			switch string(m.Key) {
			case "id":
				ev.msgID, _ = s.Str()
			case "model":
				ev.model, _ = s.StrOrNull()
			case "content":
				ev.content, _ = s.Value()
				ev.contentComplete = true
			case "stop_reason":
				if r, _ := s.StrOrNull(); r != nil {
					ev.setStop(claudeStop(r))
				}
			case "usage":
				readClaudeUsage(s, ev)
			default:
				s.Skip()
			}
		}
	}
	if ev.msgID == nil {
		ev.msgID = []byte{} // a message without an id is still a message
	}
	ev.msgOpen = true
	return !s.Bad
}

func claudeUser(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	for s.Next(o) {
		if claudeParent(s, o, ev) {
			continue
		}
		if string(o.Key) != "message" {
			s.Skip()
			continue
		}
		if !s.Object() {
			continue
		}
		var m jsonscan.Obj
		for s.Find(&m, "content") {
			ev.content, _ = s.Value()
		}
	}
	return !s.Bad
}

// claudeResult reads the final result. With is_error true the turn failed
// (an API error, the CLI's own turn limit): its text is the subtype (unless
// "success") and the result text, else the first of "errors".
func claudeResult(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	var subtype, text, firstErr []byte
	for s.Next(o) {
		switch string(o.Key) {
		case "is_error":
			ev.failed, _ = s.Boolean()
		case "subtype":
			subtype, _ = s.StrOrNull()
		case "result":
			if s.Peek() == '"' {
				text, _ = s.Text()
			} else {
				s.Skip()
			}
		case "errors":
			firstErr = firstString(s)
		case "total_cost_usd":
			if m, ok := readMoney(s); ok {
				ev.costKind, ev.cost = costSegment, m
			}
		case "stop_reason":
			if r, _ := s.StrOrNull(); r != nil {
				ev.lastStop = claudeStop(r)
			}
		default:
			s.Skip()
		}
	}
	if ev.failed {
		if string(subtype) != "success" {
			ev.errHead = subtype
		}
		ev.errText = text
		if len(bytes.TrimSpace(text)) == 0 {
			ev.errText = firstErr
		}
	}
	return !s.Bad
}

// claudeParent reads parent_tool_use_id, which marks a subagent's line
// (docs/design.md#subagents); null is the main agent. It reports whether the
// member was that key (and consumed).
func claudeParent(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	if string(o.Key) != "parent_tool_use_id" {
		return false
	}
	ev.agent, _ = s.StrOrNull()
	return true
}

// firstString reads an array and returns its first string element (raw).
func firstString(s *jsonscan.Scanner) []byte {
	if s.Peek() != '[' {
		s.Skip()
		return nil
	}
	s.EnterArray()
	var a jsonscan.Arr
	var first []byte
	for s.Elem(&a) {
		if first == nil && s.Peek() == '"' {
			first, _ = s.Text()
			continue
		}
		s.Skip()
	}
	return first
}

func claudeStreamEvent(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	for s.Next(o) {
		if claudeParent(s, o, ev) {
			continue
		}
		if string(o.Key) != "event" {
			s.Skip()
			continue
		}
		if !s.Object() {
			continue
		}
		var se jsonscan.Obj
		var etype []byte
		for s.Next(&se) {
			switch string(se.Key) {
			case "type":
				etype, _ = s.Str()
			case "message": // message_start
				readClaudeStreamMessage(s, ev)
			case "content_block": // content_block_start
				readClaudeBlock(s, ev)
			case "delta": // content_block_delta, message_delta
				readClaudeDelta(s, ev)
			case "usage": // message_delta
				readClaudeUsage(s, ev)
			default:
				s.Skip()
			}
		}
		switch string(etype) {
		case "message_start", "content_block_start", "content_block_delta", "content_block_stop",
			"message_delta", "message_stop":
			ev.msgOpen = true
		}
	}
	return !s.Bad
}

func readClaudeStreamMessage(s *jsonscan.Scanner, ev *event) {
	if !s.Enter() {
		return
	}
	var o jsonscan.Obj
	for s.Next(&o) {
		switch string(o.Key) {
		case "id":
			ev.msgID, _ = s.Str()
		case "model":
			ev.model, _ = s.StrOrNull()
		case "usage":
			readClaudeUsage(s, ev)
		default:
			s.Skip()
		}
	}
}

func readClaudeBlock(s *jsonscan.Scanner, ev *event) {
	if !s.Enter() {
		return
	}
	var o jsonscan.Obj
	var typ, id, name []byte
	for s.Next(&o) {
		switch string(o.Key) {
		case "type":
			typ, _ = s.Str()
		case "id":
			id, _ = s.Str()
		case "name":
			name, _ = s.Str()
		default:
			s.Skip()
		}
	}
	if len(typ) >= 8 && string(typ[len(typ)-8:]) == "tool_use" {
		ev.addCall(id, name, nil, false) // arguments stream in later
	}
}

func readClaudeDelta(s *jsonscan.Scanner, ev *event) {
	if !s.Enter() {
		return
	}
	var o jsonscan.Obj
	var typ, text []byte
	for s.Next(&o) {
		switch string(o.Key) {
		case "type":
			typ, _ = s.Str()
		case "text", "thinking":
			text, _ = s.Text()
		case "stop_reason": // message_delta: the message's stop, when its assistant line has none
			if r, _ := s.StrOrNull(); r != nil {
				ev.setStop(claudeStop(r))
				ev.weakStop = true
			}
		default:
			s.Skip()
		}
	}
	switch string(typ) {
	case "text_delta":
		ev.delta, ev.hasDelta, ev.deltaText = text, true, true
	case "thinking_delta":
		ev.delta, ev.hasDelta = text, true
	}
}

// readClaudeUsage reads the Messages API usage buckets that are present.
func readClaudeUsage(s *jsonscan.Scanner, ev *event) {
	if !s.Object() {
		return
	}
	var o jsonscan.Obj
	for s.Next(&o) {
		var dst *int64
		var f tokenFields
		switch string(o.Key) {
		case "input_tokens":
			dst, f = &ev.toks.input, tokIn
		case "output_tokens":
			dst, f = &ev.toks.output, tokOut
		case "cache_read_input_tokens":
			dst, f = &ev.toks.cacheRead, tokCacheRead
		case "cache_creation_input_tokens":
			dst, f = &ev.toks.cacheWrite, tokCacheWrite
		default:
			s.Skip()
			continue
		}
		n, _ := s.Integer()
		*dst = n
		ev.toksSet |= f
	}
	if ev.toksSet != 0 {
		ev.costKind = costTokens
	}
}

// claudeStop normalizes a Messages API stop_reason.
func claudeStop(b []byte) string {
	switch string(b) {
	case "end_turn", "stop_sequence":
		return StopEnd
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopLength
	case "refusal":
		return StopError
	}
	return ""
}

// sniffClaude says whether a line is claude's, for auto (format.go); its
// result carries "subtype".
func sniffClaude(typ string, line []byte) bool {
	switch typ {
	case "system", "assistant", "user", "stream_event", "rate_limit_event":
		return true
	case "result":
		return topHas(line, "subtype")
	}
	return false
}
