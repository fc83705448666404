package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// pi --mode json: one JSON object per AgentEvent (pi-mono
// packages/agent/src/types.ts AgentEvent; packages/ai/src/types.ts
// AssistantMessage and AssistantMessageEvent), plus the coding agent's
// session events (auto_compaction_*, auto_retry_*, compaction_*,
// queue_update, and a "session" header),
// and in RPC mode (pi --mode rpc, packages/coding-agent/src/modes/rpc/
// rpc-types.ts) command replies ("response") and UI requests
// ("extension_ui_request", earlier "hook_ui_request"), which are ignored.
//
//   - agent_start reopens the turn; agent_end is the final result event.
//   - message_start/message_update/message_end carry the whole (partial)
//     message; only role "assistant" is a model message; message_end ends it.
//     Every message_update restates the partial: its call ids are steps at
//     first sight, its usage.cost.total replaces the message's cost.
//   - assistantMessageEvent text_delta/thinking_delta carry the deltas;
//     toolcall_end carries a call with complete arguments.
//   - tool_execution_start has complete arguments; tool_execution_end the
//     result with isError.
//   - turn_end restates the turn's assistant message: it ends the message
//     only if no message_end did.
func parsePi(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool {
	ev := c.ev
	switch string(typ) {
	case "message_start", "message_update", "message_end", "turn_end":
		return piMessageEvent(c, s, o, string(typ))
	case "tool_execution_start", "tool_execution_end":
		return piToolEvent(s, o, string(typ) == "tool_execution_start", ev)
	case "agent_start":
		ev.start, ev.newSegment = true, true
	case "agent_end": // a failure when the last message stopped with an error
		ev.final, ev.failOnErrorStop = true, true
	case "turn_start", "tool_execution_update":
	case "auto_compaction_start", "auto_compaction_end", "auto_retry_start", "auto_retry_end",
		"compaction_start", "compaction_end", "queue_update":
		// The coding agent's notices (compaction_* and queue_update are pi
		// 0.7x's names beside the older auto_compaction_*): they carry nothing.
		ev.ignored = true
	case "session":
		// The session header ({"type":"session","version":3,"id","timestamp","cwd"}):
		// it carries nothing the detectors read; its id is the CLI's own
		// session id (--session).
		ev.ignored = true
		for s.Find(o, "id") {
			ev.sessionID = readSessionID(s)
		}
		return !s.Bad
	case "response", "extension_ui_request", "hook_ui_request":
		// RPC mode's command replies and UI requests: they carry nothing.
		ev.ignored = true
	default:
		return false
	}
	return s.SkipRest(o)
}

// piMessage is what the detectors read from a pi AssistantMessage.
type piMessage struct {
	assistant bool
	content   []byte
	strs      jsonscan.Spans // content's text and thinking strings, in content (readPiContent)
	cost      Money
	hasCost   bool
	stop      []byte
	hasStop   bool
	errMsg    []byte // errorMessage, set when the message stopped with an error
	// raw is the whole message object as written, once read and checked
	// with the full grammar: assistantMessageEvent.partial restates it
	// byte for byte (pi serializes the same object twice), so a partial
	// that starts with these bytes is this same, checked value. Nil when
	// the message relied on readMoney's leniency (NaN), which a partial
	// must not inherit: skip would reject it there.
	raw []byte
}

// piAME is what they read from an assistantMessageEvent.
type piAME struct {
	typ                        []byte
	delta                      []byte
	hasDelta                   bool
	callID, callName, callArgs []byte
	hasCall                    bool
}

// The orders in which pi writes its objects' keys (pi-ai's AssistantMessage,
// Usage and AssistantMessageEvent): hints for the scanner (jsonscan.Obj.Order).
var (
	piTopOrder     = jsonscan.KeyOrder("type", "message", "assistantMessageEvent")
	piMessageOrder = jsonscan.KeyOrder("role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp")
	piUsageOrder   = jsonscan.KeyOrder("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
	piCostOrder    = jsonscan.KeyOrder("input", "output", "cacheRead", "cacheWrite", "total")
	piAMEOrder     = jsonscan.KeyOrder("type", "contentIndex", "delta", "partial")
)

func piMessageEvent(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ string) bool {
	ev := c.ev
	var m piMessage
	var a piAME
	var grown []byte
	memo := c.pi
	if !piMemoOn {
		memo = nil
	}
	o.Order = piTopOrder
	if o.N == 1 && jsonscan.HasLit(s.Buf, s.Pos, `,"message":`) { // after "type", as pi writes them: read in place
		s.Pos += len(`,"message":`)
		o.N++
		grown = readPiMessage(s, &m, memo)
		if !s.Bad && jsonscan.HasLit(s.Buf, s.Pos, `,"assistantMessageEvent":`) {
			s.Pos += len(`,"assistantMessageEvent":`)
			o.N++
			readPiAME(s, &a, m.raw, grown)
		}
	}
	for s.Next(o) {
		switch string(o.Key) {
		case "message":
			grown = readPiMessage(s, &m, memo)
		case "assistantMessageEvent":
			readPiAME(s, &a, m.raw, grown)
		default:
			s.Skip()
		}
	}
	if s.Bad {
		return false
	}
	if !piMemoOn {
		m.strs = jsonscan.Spans{} // the fold finds the strings itself
	}
	if !m.assistant {
		return true // user and toolResult messages are not model messages
	}
	final := typ == "message_end" || typ == "turn_end"
	if typ == "turn_end" && !c.msgOpen {
		return true // a restatement of a message that already ended
	}
	ev.msgOpen = true
	if m.hasCost {
		ev.costKind, ev.cost = costMessage, m.cost
	}
	switch {
	case final:
		ev.content, ev.contentComplete, ev.contentStrs = m.content, true, m.strs
		ev.msgEnd = true
		if m.hasStop {
			ev.setStop(piStop(m.stop))
		}
		if m.errMsg != nil {
			ev.errNote = m.errMsg
		}
	case typ == "message_start":
		ev.content, ev.contentStrs = m.content, m.strs
	default: // message_update
		switch string(a.typ) {
		case "text_delta":
			ev.delta, ev.hasDelta, ev.deltaText = a.delta, a.hasDelta, true
		case "thinking_delta":
			ev.delta, ev.hasDelta = a.delta, a.hasDelta
		case "toolcall_start", "toolcall_delta":
			ev.content, ev.contentStrs = m.content, m.strs
		case "toolcall_end":
			ev.content, ev.contentStrs = m.content, m.strs
			if a.hasCall {
				ev.addCall(a.callID, a.callName, a.callArgs, true)
			}
		}
	}
	return true
}

// readPiMessage reads a message; memo (nil for none) carries what the
// line before left (format_pi_memo.go). grown is what the message's text
// gained since the memo's when the memo's template read it (else nil):
// the contents of a string on their own.
func readPiMessage(s *jsonscan.Scanner, m *piMessage, memo *piMemo) (grown []byte) {
	s.SkipSpace()
	if grown, ok := readPiMessageMemo(s, m, memo); ok {
		return grown
	}
	if !readPiMessageInOrder(s, m, memo) {
		readPiMembers(s, m, memo)
	}
	return nil
}

// readPiMembers is readPiMessage for any spelling, member by member.
func readPiMembers(s *jsonscan.Scanner, m *piMessage, memo *piMemo) {
	start := s.Pos
	if !s.Enter() {
		return
	}
	strict := true
	o := jsonscan.Obj{Order: piMessageOrder}
	for s.Next(&o) {
		switch string(o.Key) {
		case "role":
			r, _ := s.Str()
			m.assistant = string(r) == "assistant"
		case "content":
			m.content, m.strs = readPiContent(s, memo)
		case "usage":
			strict = readPiUsage(s, m, memo) && strict
		case "stopReason":
			m.stop, _ = s.StrOrNull()
			m.hasStop = true
		case "errorMessage":
			m.errMsg, _ = s.TextOrNull()
		default:
			s.Skip()
		}
	}
	if strict && !s.Bad {
		m.raw = s.Buf[start:s.Pos]
	}
}

// piInOrder enables the in-order readers; tests turn it off to compare
// them with the member-by-member readers.
var piInOrder = true

// readPiMessageInOrder reads a message written as pi writes it: its
// members in pi's order (piMessageOrder, errorMessage after stopReason),
// no spaces between tokens, role and stopReason without a backslash. It
// matches each key's bytes in place, where readPiMessage reads keys one by
// one, and reads each value with the same reader. At the first byte that
// differs it returns false, having moved nothing and set nothing in m, and
// readPiMessage reads the message member by member (to the same result
// wherever both read it). A value's reader that fails leaves the scanner
// failed, as in readPiMessage.
func readPiMessageInOrder(s *jsonscan.Scanner, m *piMessage, memo *piMemo) bool {
	b, start := s.Buf, s.Pos
	t := *m
	i := start
	if s.Bad || !piInOrder || !jsonscan.HasLit(b, i, `{"role":"`) {
		return false
	}
	i += len(`{"role":"`)
	end, bs := jsonscan.ScanString(b, i)
	if end < 0 || bs || !jsonscan.HasLit(b, end+1, `,"content":`) {
		return false
	}
	t.assistant = string(b[i:end]) == "assistant"
	s.Pos = end + 1 + len(`,"content":`)
	var cut piCut
	cut.content = s.Pos
	t.content, t.strs = readPiContent(s, memo)
	for _, k := range [...]string{`,"api":`, `,"provider":`, `,"model":`} {
		if s.Bad || !jsonscan.HasLit(b, s.Pos, k) {
			return s.Bad || s.Rewind(start)
		}
		s.Pos += len(k)
		s.Skip()
	}
	if s.Bad || !jsonscan.HasLit(b, s.Pos, `,"usage":`) {
		return s.Bad || s.Rewind(start)
	}
	s.Pos += len(`,"usage":`)
	cut.usage = s.Pos
	strict := true
	if readPiUsageInOrder(s, &t, memo) {
		end := s.Pos - len("}}") // the total, a plain number, follows the head's last colon
		cut.total = [2]int{cut.usage + bytes.LastIndexByte(b[cut.usage:end], ':') + 1, end}
	} else {
		strict = readPiUsageMembers(s, &t) // the in-order reader gave up above
	}
	if s.Bad || !jsonscan.HasLit(b, s.Pos, `,"stopReason":`) {
		return s.Bad || s.Rewind(start)
	}
	i = s.Pos + len(`,"stopReason":`)
	switch {
	case jsonscan.HasLit(b, i, "null"):
		t.stop, i = nil, i+len("null")
	case jsonscan.HasLit(b, i, `"`):
		end, bs := jsonscan.ScanString(b, i+1)
		if end < 0 || bs {
			return s.Rewind(start)
		}
		t.stop, i = b[i+1:end], end+1
		cut.stop = [2]int{i - 1 - len(t.stop), i - 1}
	default:
		return s.Rewind(start)
	}
	t.hasStop = true
	s.Pos = i
	if jsonscan.HasLit(b, s.Pos, `,"errorMessage":`) {
		s.Pos += len(`,"errorMessage":`)
		at := s.Pos
		if t.errMsg, _ = s.TextOrNull(); t.errMsg != nil {
			cut.errMsg = [2]int{at + 1, s.Pos - 1}
		}
	}
	if s.Bad || !jsonscan.HasLit(b, s.Pos, `,"timestamp":`) {
		return s.Bad || s.Rewind(start)
	}
	s.Pos += len(`,"timestamp":`)
	s.Skip()
	if s.Bad || !jsonscan.HasLit(b, s.Pos, `}`) {
		return s.Bad || s.Rewind(start)
	}
	s.Pos++
	if strict {
		t.raw = b[start:s.Pos]
	}
	if cut.total[1] > 0 && t.strs.N > 0 && !s.Esc {
		memo.setTemplate(b, start, s.Pos, &t, cut)
	}
	*m = t
	return true
}

// piUsageKeys are the keys before usage.cost.total as pi writes them,
// each with the byte that opens it.
var piUsageKeys = [...]string{`{"input":`, `,"output":`, `,"cacheRead":`, `,"cacheWrite":`, `,"totalTokens":`,
	`,"cost":{"input":`, `,"output":`, `,"cacheRead":`, `,"cacheWrite":`, `,"total":`}

// readPiUsageInOrder reads a usage written as pi writes it (its keys in
// piUsageKeys' order, numbers, no spaces, nothing else), matching the keys'
// bytes in place and checking each number, where readPiUsage reads member
// by member. At the first byte that differs (or a total that is not a
// plain number) it returns false, having moved nothing and set nothing.
func readPiUsageInOrder(s *jsonscan.Scanner, m *piMessage, memo *piMemo) bool {
	b, start := s.Buf, s.Pos
	if s.Bad || !piInOrder {
		return false
	}
	i := memo.usageHead(b, start)
	if i < 0 {
		if i = piUsageHead(b, start); i < 0 {
			return false
		}
		memo.setUsage(b[start:i])
	}
	if i >= len(b) || b[i]-'0' >= 10 { // a total of another kind: the general readers
		return false
	}
	s.Pos = i
	cost, ok := readMoney(s)
	if s.Bad || !jsonscan.HasLit(b, s.Pos, "}}") {
		return s.Bad || s.Rewind(start)
	}
	s.Pos += 2
	m.cost, m.hasCost = cost, ok
	return true
}

// piUsageHead returns the end of a usage's head at i as pi writes it (the
// keys in piUsageKeys' order, each number checked, up to the total's
// value), or -1.
func piUsageHead(b []byte, i int) int {
	for k, key := range piUsageKeys {
		if !jsonscan.HasLit(b, i, key) {
			return -1
		}
		i += len(key)
		if k == len(piUsageKeys)-1 {
			break
		}
		if i = jsonscan.NumberEnd(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// readPiUsage reads usage.cost.total. It returns false when a total was
// one of the non-JSON literals only readMoney accepts (NaN, Infinity).
func readPiUsage(s *jsonscan.Scanner, m *piMessage, memo *piMemo) bool {
	return readPiUsageInOrder(s, m, memo) || readPiUsageMembers(s, m)
}

// readPiUsageMembers is readPiUsage for any spelling, member by member.
func readPiUsageMembers(s *jsonscan.Scanner, m *piMessage) bool {
	if !s.Object() {
		return true
	}
	strict := true
	o := jsonscan.Obj{Order: piUsageOrder}
	for s.Into(&o, "cost") {
		c := jsonscan.Obj{Order: piCostOrder}
		for s.Find(&c, "total") {
			if c := s.Peek(); c == 'N' || c == 'I' || c == '-' && s.Pos+1 < len(s.Buf) && s.Buf[s.Pos+1] == 'I' {
				strict = false
			}
			m.cost, m.hasCost = readMoney(s)
		}
	}
	return strict
}

// readPiAME reads an assistantMessageEvent; msg is the line's message as
// read (piMessage.raw), which the event's partial restates, and grown
// what its text gained (readPiMessage), which a delta restates.
func readPiAME(s *jsonscan.Scanner, a *piAME, msg, grown []byte) {
	s.SkipSpace()
	if readPiAMEInOrder(s, a, msg, grown) {
		return
	}
	if !s.Enter() {
		return
	}
	o := jsonscan.Obj{Order: piAMEOrder}
	for s.Next(&o) {
		switch string(o.Key) {
		case "type":
			a.typ, _ = s.Str()
		case "delta":
			a.delta, a.hasDelta = s.Text()
		case "toolCall":
			readPiToolCall(s, a)
		case "partial":
			if !s.Restated(msg) {
				s.Skip()
			}
		default:
			s.Skip()
		}
	}
}

// readPiAMEInOrder reads a delta event as pi writes it,
// {"type":"<word>","contentIndex":<number>,"delta":"<text>","partial":<value>}
// with no spaces and a type without a backslash, matching the keys in
// place, to what readPiAME reads member by member. A delta whose bytes
// are grown's is that string, checked on the message (its bytes decide
// where it ends). At the first byte that differs it returns false, having
// moved nothing and set nothing in a.
func readPiAMEInOrder(s *jsonscan.Scanner, a *piAME, msg, grown []byte) bool {
	b, start := s.Buf, s.Pos
	if s.Bad || !piInOrder || !jsonscan.HasLit(b, start, `{"type":"`) {
		return false
	}
	i := start + len(`{"type":"`)
	end, bs := jsonscan.ScanString(b, i)
	if end < 0 || bs || !jsonscan.HasLit(b, end+1, `,"contentIndex":`) {
		return false
	}
	typ := b[i:end]
	i = jsonscan.NumberEnd(b, end+1+len(`,"contentIndex":`))
	if i < 0 || !jsonscan.HasLit(b, i, `,"delta":"`) {
		return false
	}
	i += len(`,"delta":"`)
	if n := len(grown); n > 0 && len(b)-i > n && b[i+n] == '"' && bytes.Equal(b[i:i+n], grown) {
		end = i + n
	} else if end = jsonscan.StringEnd(b, i); end < 0 {
		return false
	}
	if !jsonscan.HasLit(b, end+1, `,"partial":`) {
		return false
	}
	delta := b[i:end]
	s.Pos = end + 1 + len(`,"partial":`)
	if !s.Restated(msg) && !s.Skip() {
		return true // as readPiAME fails on these same bytes
	}
	if !jsonscan.HasLit(b, s.Pos, `}`) {
		return s.Rewind(start)
	}
	s.Pos++
	a.typ, a.delta, a.hasDelta = typ, delta, true
	return true
}

func readPiToolCall(s *jsonscan.Scanner, a *piAME) {
	if !s.Enter() {
		return
	}
	a.hasCall = true
	var o jsonscan.Obj
	for s.Next(&o) {
		switch string(o.Key) {
		case "id":
			a.callID, _ = s.Str()
		case "name":
			a.callName, _ = s.Str()
		case "arguments":
			a.callArgs, _ = s.Value()
		default:
			s.Skip()
		}
	}
}

func piToolEvent(s *jsonscan.Scanner, o *jsonscan.Obj, start bool, ev *event) bool {
	var id, name, args, answer []byte
	isErr := false
	for s.Next(o) {
		switch string(o.Key) {
		case "result":
			answer, _ = s.Value()
		case "toolCallId":
			id, _ = s.Str()
		case "toolName":
			name, _ = s.Str()
		case "args":
			args, _ = s.Value()
		case "isError":
			isErr, _ = s.Boolean()
		default:
			s.Skip()
		}
	}
	if start {
		ev.addCall(id, name, args, true)
	} else {
		ev.addAnswer(id, name, isErr, answer)
	}
	return !s.Bad
}

// piStop normalizes pi's StopReason.
func piStop(b []byte) string {
	switch string(b) {
	case "stop":
		return StopEnd
	case "toolUse":
		return StopToolUse
	case "length":
		return StopLength
	case "error":
		return StopError
	case "aborted":
		return StopAborted
	}
	return ""
}

// sniffPi says whether a line is pi's, for auto (format.go): its event
// types, and the RPC mode's command reply.
func sniffPi(typ string, line []byte) bool {
	switch typ {
	case "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
		"message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
		"auto_compaction_start", "auto_compaction_end", "auto_retry_start", "auto_retry_end",
		"compaction_start", "compaction_end", "queue_update", "session", "extension_ui_request", "hook_ui_request":
		return true
	case "response":
		return topHas(line, "command")
	}
	return false
}
