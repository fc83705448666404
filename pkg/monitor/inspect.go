package monitor

import (
	"bytes"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// Inspection: what one line carried, for tools that show a stream to a
// person (pkg/explain). The sidecar never calls these: they allocate.

// LineCall is a tool call the line carried.
type LineCall struct {
	ID   string
	Name string
	// Args is the call's raw JSON arguments as the line carries them.
	Args string
	// Complete is false for a call whose arguments are still streaming.
	Complete bool
}

// LineResult is a tool result the line carried.
type LineResult struct {
	ID, Name string
	IsError  bool
}

// LineInfo is what the fold saw in one line.
type LineInfo struct {
	Calls   []LineCall
	Results []LineResult
}

// Inspect returns the tool calls and results of the line the engine parsed
// last. Call it right after a Feed whose line was parsed (not blank, not
// counted as unparsed, no trip before it), before the line's buffer is
// reused: the parse points into it.
func (e *Engine) Inspect() LineInfo {
	ev := &e.ev
	var info LineInfo
	if ev.content != nil {
		inspectContent(ev.content, ev.contentComplete, &info)
	}
	for _, c := range ev.calls[:ev.ncalls] {
		info.Calls = append(info.Calls, LineCall{ID: string(c.id), Name: unescape(c.name), Args: string(c.args), Complete: c.complete})
	}
	for _, r := range ev.results[:ev.nresults] {
		info.Results = append(info.Results, LineResult{ID: string(r.id), Name: unescape(r.name), IsError: r.isError})
	}
	return info
}

// inspectContent reads the calls and results of a content array the way
// Engine.content folds them.
func inspectContent(raw []byte, complete bool, info *LineInfo) {
	eachContentItem(raw, func(it contentItem) {
		if it.call {
			info.Calls = append(info.Calls, LineCall{ID: string(it.id), Name: unescape(it.name), Args: string(it.args), Complete: complete})
		} else {
			info.Results = append(info.Results, LineResult{ID: string(it.id), IsError: it.isErr})
		}
	})
}

// contentItem is a tool call (call set: id, name, args) or a tool result
// (id is its tool_use_id) of a content array, pointing into it.
type contentItem struct {
	call           bool
	id, name, args []byte
	isErr          bool
}

// eachContentItem calls fn with each tool call and tool result of a
// content array, in order, without allocating; it stops at bad JSON.
func eachContentItem(raw []byte, fn func(contentItem)) {
	var s jsonscan.Scanner
	s.Reset(raw)
	if s.Peek() != '[' {
		return
	}
	s.EnterArray()
	var a jsonscan.Arr
	for s.Elem(&a) {
		if s.Peek() != '{' {
			if !s.Skip() {
				return
			}
			continue
		}
		s.Enter()
		var o jsonscan.Obj
		var typ, id, name, args, useID []byte
		isErr := false
		for {
			k, ok := s.Key(&o)
			if !ok {
				break
			}
			switch string(k) {
			case "type":
				typ, _ = s.Str()
			case "id":
				id, _ = s.StrOrNull()
			case "name":
				name, _ = s.StrOrNull()
			case "arguments", "input":
				args, _ = s.Value()
			case "tool_use_id":
				useID, _ = s.StrOrNull()
			case "is_error":
				isErr, _ = s.Boolean()
			default:
				s.Skip()
			}
		}
		if s.Bad {
			return
		}
		switch {
		case string(typ) == "toolCall" || bytes.HasSuffix(typ, []byte("tool_use")):
			fn(contentItem{call: true, id: id, name: name, args: args})
		case string(typ) == "tool_result":
			fn(contentItem{id: useID, isErr: isErr})
		}
	}
}

// LineTime is the time of a line's `kubectl logs --timestamps` prefix, and
// the line without it; a zero time when it has none.
func LineTime(line []byte) (time.Time, []byte) { return splitTimestamp(line) }
