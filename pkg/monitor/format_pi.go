package monitor

import "bytes"

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
func parsePi(e *Engine, s *scanner, o *obj, typ []byte, ev *event) bool {
	switch string(typ) {
	case "message_start", "message_update", "message_end", "turn_end":
		return piMessageEvent(e, s, o, string(typ), ev)
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
		for s.find(o, "id") {
			ev.sessionID = readSessionID(s)
		}
		return !s.bad
	case "response", "extension_ui_request", "hook_ui_request":
		// RPC mode's command replies and UI requests: they carry nothing.
		ev.ignored = true
	default:
		return false
	}
	return s.skipRest(o)
}

// piMessage is what the detectors read from a pi AssistantMessage.
type piMessage struct {
	assistant bool
	content   []byte
	strs      spans // content's text and thinking strings, in content (readPiContent)
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
// Usage and AssistantMessageEvent): hints for the scanner (obj.order).
var (
	piTopOrder     = keyOrder("type", "message", "assistantMessageEvent")
	piMessageOrder = keyOrder("role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp")
	piUsageOrder   = keyOrder("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
	piCostOrder    = keyOrder("input", "output", "cacheRead", "cacheWrite", "total")
	piAMEOrder     = keyOrder("type", "contentIndex", "delta", "partial")
)

func piMessageEvent(e *Engine, s *scanner, o *obj, typ string, ev *event) bool {
	var m piMessage
	var a piAME
	var grown []byte
	memo := &e.pi
	if !piMemoOn {
		memo = nil
	}
	o.order = piTopOrder
	if o.n == 1 && hasLit(s.b, s.i, `,"message":`) { // after "type", as pi writes them: read in place
		s.i += len(`,"message":`)
		o.n++
		grown = readPiMessage(s, &m, memo)
		if !s.bad && hasLit(s.b, s.i, `,"assistantMessageEvent":`) {
			s.i += len(`,"assistantMessageEvent":`)
			o.n++
			readPiAME(s, &a, m.raw, grown)
		}
	}
	for s.next(o) {
		switch string(o.key) {
		case "message":
			grown = readPiMessage(s, &m, memo)
		case "assistantMessageEvent":
			readPiAME(s, &a, m.raw, grown)
		default:
			s.skip()
		}
	}
	if s.bad {
		return false
	}
	if !piMemoOn {
		m.strs = spans{} // the fold finds the strings itself
	}
	if !m.assistant {
		return true // user and toolResult messages are not model messages
	}
	final := typ == "message_end" || typ == "turn_end"
	if typ == "turn_end" && !e.msg.open {
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
func readPiMessage(s *scanner, m *piMessage, memo *piMemo) (grown []byte) {
	s.ws()
	if grown, ok := readPiMessageMemo(s, m, memo); ok {
		return grown
	}
	if !readPiMessageInOrder(s, m, memo) {
		readPiMembers(s, m, memo)
	}
	return nil
}

// readPiMembers is readPiMessage for any spelling, member by member.
func readPiMembers(s *scanner, m *piMessage, memo *piMemo) {
	start := s.i
	if !s.enter() {
		return
	}
	strict := true
	o := obj{order: piMessageOrder}
	for s.next(&o) {
		switch string(o.key) {
		case "role":
			r, _ := s.str()
			m.assistant = string(r) == "assistant"
		case "content":
			m.content, m.strs = readPiContent(s, memo)
		case "usage":
			strict = readPiUsage(s, m, memo) && strict
		case "stopReason":
			m.stop, _ = s.strOrNull()
			m.hasStop = true
		case "errorMessage":
			m.errMsg, _ = s.textOrNull()
		default:
			s.skip()
		}
	}
	if strict && !s.bad {
		m.raw = s.b[start:s.i]
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
func readPiMessageInOrder(s *scanner, m *piMessage, memo *piMemo) bool {
	b, start := s.b, s.i
	t := *m
	i := start
	if s.bad || !piInOrder || !hasLit(b, i, `{"role":"`) {
		return false
	}
	i += len(`{"role":"`)
	end, bs := scanString(b, i)
	if end < 0 || bs || !hasLit(b, end+1, `,"content":`) {
		return false
	}
	t.assistant = string(b[i:end]) == "assistant"
	s.i = end + 1 + len(`,"content":`)
	var cut piCut
	cut.content = s.i
	t.content, t.strs = readPiContent(s, memo)
	for _, k := range [...]string{`,"api":`, `,"provider":`, `,"model":`} {
		if s.bad || !hasLit(b, s.i, k) {
			return s.bad || s.rewind(start)
		}
		s.i += len(k)
		s.skip()
	}
	if s.bad || !hasLit(b, s.i, `,"usage":`) {
		return s.bad || s.rewind(start)
	}
	s.i += len(`,"usage":`)
	cut.usage = s.i
	strict := true
	if readPiUsageInOrder(s, &t, memo) {
		end := s.i - len("}}") // the total, a plain number, follows the head's last colon
		cut.total = [2]int{cut.usage + bytes.LastIndexByte(b[cut.usage:end], ':') + 1, end}
	} else {
		strict = readPiUsageMembers(s, &t) // the in-order reader gave up above
	}
	if s.bad || !hasLit(b, s.i, `,"stopReason":`) {
		return s.bad || s.rewind(start)
	}
	i = s.i + len(`,"stopReason":`)
	switch {
	case hasLit(b, i, "null"):
		t.stop, i = nil, i+len("null")
	case hasLit(b, i, `"`):
		end, bs := scanString(b, i+1)
		if end < 0 || bs {
			return s.rewind(start)
		}
		t.stop, i = b[i+1:end], end+1
		cut.stop = [2]int{i - 1 - len(t.stop), i - 1}
	default:
		return s.rewind(start)
	}
	t.hasStop = true
	s.i = i
	if hasLit(b, s.i, `,"errorMessage":`) {
		s.i += len(`,"errorMessage":`)
		at := s.i
		if t.errMsg, _ = s.textOrNull(); t.errMsg != nil {
			cut.errMsg = [2]int{at + 1, s.i - 1}
		}
	}
	if s.bad || !hasLit(b, s.i, `,"timestamp":`) {
		return s.bad || s.rewind(start)
	}
	s.i += len(`,"timestamp":`)
	s.skip()
	if s.bad || !hasLit(b, s.i, `}`) {
		return s.bad || s.rewind(start)
	}
	s.i++
	if strict {
		t.raw = b[start:s.i]
	}
	if cut.total[1] > 0 && t.strs.n > 0 && !s.esc {
		memo.setTemplate(b, start, s.i, &t, cut)
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
func readPiUsageInOrder(s *scanner, m *piMessage, memo *piMemo) bool {
	b, start := s.b, s.i
	if s.bad || !piInOrder {
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
	s.i = i
	cost, ok := readMoney(s)
	if s.bad || !hasLit(b, s.i, "}}") {
		return s.bad || s.rewind(start)
	}
	s.i += 2
	m.cost, m.hasCost = cost, ok
	return true
}

// piUsageHead returns the end of a usage's head at i as pi writes it (the
// keys in piUsageKeys' order, each number checked, up to the total's
// value), or -1.
func piUsageHead(b []byte, i int) int {
	for k, key := range piUsageKeys {
		if !hasLit(b, i, key) {
			return -1
		}
		i += len(key)
		if k == len(piUsageKeys)-1 {
			break
		}
		if i = numberEnd(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// readPiUsage reads usage.cost.total. It returns false when a total was
// one of the non-JSON literals only readMoney accepts (NaN, Infinity).
func readPiUsage(s *scanner, m *piMessage, memo *piMemo) bool {
	return readPiUsageInOrder(s, m, memo) || readPiUsageMembers(s, m)
}

// readPiUsageMembers is readPiUsage for any spelling, member by member.
func readPiUsageMembers(s *scanner, m *piMessage) bool {
	if !s.object() {
		return true
	}
	strict := true
	o := obj{order: piUsageOrder}
	for s.into(&o, "cost") {
		c := obj{order: piCostOrder}
		for s.find(&c, "total") {
			if c := s.peek(); c == 'N' || c == 'I' || c == '-' && s.i+1 < len(s.b) && s.b[s.i+1] == 'I' {
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
func readPiAME(s *scanner, a *piAME, msg, grown []byte) {
	s.ws()
	if readPiAMEInOrder(s, a, msg, grown) {
		return
	}
	if !s.enter() {
		return
	}
	o := obj{order: piAMEOrder}
	for s.next(&o) {
		switch string(o.key) {
		case "type":
			a.typ, _ = s.str()
		case "delta":
			a.delta, a.hasDelta = s.text()
		case "toolCall":
			readPiToolCall(s, a)
		case "partial":
			if !s.restated(msg) {
				s.skip()
			}
		default:
			s.skip()
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
func readPiAMEInOrder(s *scanner, a *piAME, msg, grown []byte) bool {
	b, start := s.b, s.i
	if s.bad || !piInOrder || !hasLit(b, start, `{"type":"`) {
		return false
	}
	i := start + len(`{"type":"`)
	end, bs := scanString(b, i)
	if end < 0 || bs || !hasLit(b, end+1, `,"contentIndex":`) {
		return false
	}
	typ := b[i:end]
	i = numberEnd(b, end+1+len(`,"contentIndex":`))
	if i < 0 || !hasLit(b, i, `,"delta":"`) {
		return false
	}
	i += len(`,"delta":"`)
	if n := len(grown); n > 0 && len(b)-i > n && b[i+n] == '"' && bytes.Equal(b[i:i+n], grown) {
		end = i + n
	} else if end = stringEnd(b, i); end < 0 {
		return false
	}
	if !hasLit(b, end+1, `,"partial":`) {
		return false
	}
	delta := b[i:end]
	s.i = end + 1 + len(`,"partial":`)
	if !s.restated(msg) && !s.skip() {
		return true // as readPiAME fails on these same bytes
	}
	if !hasLit(b, s.i, `}`) {
		return s.rewind(start)
	}
	s.i++
	a.typ, a.delta, a.hasDelta = typ, delta, true
	return true
}

func readPiToolCall(s *scanner, a *piAME) {
	if !s.enter() {
		return
	}
	a.hasCall = true
	var o obj
	for s.next(&o) {
		switch string(o.key) {
		case "id":
			a.callID, _ = s.str()
		case "name":
			a.callName, _ = s.str()
		case "arguments":
			a.callArgs, _ = s.value()
		default:
			s.skip()
		}
	}
}

func piToolEvent(s *scanner, o *obj, start bool, ev *event) bool {
	var id, name, args, answer []byte
	isErr := false
	for s.next(o) {
		switch string(o.key) {
		case "result":
			answer, _ = s.value()
		case "toolCallId":
			id, _ = s.str()
		case "toolName":
			name, _ = s.str()
		case "args":
			args, _ = s.value()
		case "isError":
			isErr, _ = s.boolean()
		default:
			s.skip()
		}
	}
	if start {
		ev.addCall(id, name, args, true)
	} else {
		ev.addAnswer(id, name, isErr, answer)
	}
	return !s.bad
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
