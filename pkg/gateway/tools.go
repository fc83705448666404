package gateway

import (
	"io"
	"sync/atomic"
)

// toolsScan passes a model request's body on as it streams to the upstream
// and notes whether the request offers the model tools: a top-level
// "tools" member whose array is not empty. One without is a side request
// (a title, a CLI's own check): paid, but its deltas and stop are not the
// turn's (monitor.ModelEvent.Side). The body is never held: the scan keeps
// a few bytes of state. A top-level key spelt with escapes may be "tools"
// in disguise, and counts as one: a hostile agent cannot hide its turn's
// answers as side requests.
type toolsScan struct {
	rc    io.ReadCloser
	tools atomic.Bool

	depth    int
	inString bool
	escaped  bool   // the last byte in the string was a backslash
	key      []byte // the depth-1 string being read, up to len("tools")+1 bytes
	odd      bool   // that string had an escape
	stage    scanStage
}

type scanStage uint8

const (
	stageNone  scanStage = iota
	stageKey             // a depth-1 string that may be "tools" just ended
	stageColon           // its colon: the value comes next
	stageArray           // the value is an array: empty or not
)

func (s *toolsScan) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if !s.tools.Load() {
		for _, c := range p[:n] {
			s.scan(c)
		}
	}
	return n, err
}

func (s *toolsScan) Close() error { return s.rc.Close() }

// offersTools says whether the body read so far offered tools.
func (s *toolsScan) offersTools() bool { return s.tools.Load() }

func (s *toolsScan) scan(c byte) {
	if s.inString {
		s.stringByte(c)
		return
	}
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return
	}
	s.advance(c)
	switch c {
	case '"':
		s.inString, s.key, s.odd = true, s.key[:0], false
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
	}
}

// advance moves the "tools": [ ... stages on a byte outside strings.
func (s *toolsScan) advance(c byte) {
	switch {
	case s.stage == stageKey && c == ':':
		s.stage = stageColon
	case s.stage == stageColon && c == '[':
		s.stage = stageArray
	case s.stage == stageArray && c != ']':
		s.tools.Store(true)
		s.stage = stageNone
	default:
		s.stage = stageNone
	}
}

func (s *toolsScan) stringByte(c byte) {
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped, s.odd = true, true
		return
	case c == '"':
		s.inString = false
		if s.depth == 1 && (s.odd || string(s.key) == "tools") {
			s.stage = stageKey
		}
		return
	}
	if s.depth == 1 && len(s.key) <= len("tools") {
		s.key = append(s.key, c)
	}
}
