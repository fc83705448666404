package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// maxAgentSessionID bounds the CLI's own session id the engine keeps
// (decoded bytes): a longer one is not an id any CLI writes, and is ignored.
const maxAgentSessionID = 256

// agentSessionID holds the CLI's own session id (Report.AgentSessionID)
// without allocating: the first one the stream names, decoded. It is
// copied once; later lines never change it.
type agentSessionID struct {
	b [maxAgentSessionID + 1]byte // one more: a decoded id that fills it is too long
	n int
}

// take keeps raw (JSON string contents, still escaped) when no id is kept
// yet and it decodes to 1..maxAgentSessionID bytes.
func (a *agentSessionID) take(raw []byte) {
	if a.n > 0 || len(raw) == 0 {
		return
	}
	if bytes.IndexByte(raw, '\\') < 0 { // the usual id: copied as it is
		if len(raw) <= maxAgentSessionID {
			a.n = copy(a.b[:], raw)
		}
		return
	}
	if n := jsonscan.UnescapeTo(a.b[:], raw); n <= maxAgentSessionID {
		a.n = n
	}
}

// set restores a kept id (checkpoint), bounded like take.
func (a *agentSessionID) set(b []byte) {
	a.n = 0
	if len(b) <= maxAgentSessionID {
		a.n = copy(a.b[:], b)
	}
}

func (a *agentSessionID) bytes() []byte { return a.b[:a.n] }

// readSessionID reads a session id member's value: a string's raw
// contents, or nil (and the value skipped) for anything else, which does
// not make the line unparsed.
func readSessionID(s *jsonscan.Scanner) []byte {
	if s.Peek() != '"' {
		s.Skip()
		return nil
	}
	v, _ := s.Text()
	return v
}
