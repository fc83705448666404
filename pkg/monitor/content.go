package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// content reads a raw array of content blocks (pi and claude messages) in
// order: tool calls (toolCall, tool_use, server_tool_use, ...), text that
// speaks, and tool results (claude user lines). strs are the strings the
// parser found in raw (event.contentStrs).
func (e *Engine) content(raw []byte, complete bool, strs jsonscan.Spans) bool {
	var s jsonscan.Scanner
	s.Reset(raw)
	s.Known = strs
	if s.Peek() != '[' {
		return false // claude user content may be a plain string
	}
	s.EnterArray()
	var a jsonscan.Arr
	for s.Elem(&a) {
		if s.Peek() != '{' {
			if !s.Skip() {
				return false
			}
			continue
		}
		start := s.Pos
		s.Esc = false
		b := readBlock(&s)
		if s.Bad {
			return false
		}
		if s.Esc { // rare: a key or word written with ASCII escapes; read the block again, decoded
			var c jsonscan.Scanner
			c.Reset(jsonscan.Canonicalize(nil, raw[start:s.Pos]))
			if b = readBlock(&c); c.Bad {
				return false
			}
		}
		switch {
		case string(b.typ) == "toolCall" || bytes.HasSuffix(b.typ, []byte("tool_use")):
			if e.call(callRef{id: b.id, name: b.name, args: b.args, complete: complete}) {
				return true
			}
		case string(b.typ) == "text":
			if e.f.Msg.Open && hasText(b.text) {
				e.f.Msg.Speaks = true
			}
			if complete && e.f.Msg.Open && e.block(b.text, kindText) {
				return true
			}
		case string(b.typ) == "thinking":
			if complete && e.f.Msg.Open && e.block(b.thinking, kindThinking) {
				return true
			}
		case string(b.typ) == "tool_result":
			if e.answer(b.useID, nil, b.isErr, b.answer) {
				return true
			}
		}
	}
	return false
}

// block is what the fold reads from one content block.
type block struct {
	typ, id, name, args, text, thinking, answer, useID []byte
	isErr                                              bool
}

// readBlock reads one content block object, the scanner at its '{'.
func readBlock(s *jsonscan.Scanner) (b block) {
	s.Enter()
	var o jsonscan.Obj
	for {
		k, ok := s.Key(&o)
		if !ok {
			return b
		}
		switch string(k) {
		case "type":
			b.typ, _ = s.Str()
		case "id":
			b.id, _ = s.StrOrNull()
		case "name":
			b.name, _ = s.StrOrNull()
		case "arguments", "input":
			b.args, _ = s.Value()
		case "text":
			b.text, _ = s.TextOrNull()
		case "thinking":
			b.thinking, _ = s.TextOrNull()
		case "content": // a tool_result's answer
			b.answer, _ = s.Value()
		case "tool_use_id":
			b.useID, _ = s.StrOrNull()
		case "is_error":
			b.isErr, _ = s.Boolean()
		default:
			s.Skip()
		}
	}
}
