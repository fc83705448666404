package monitor

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxErrText bounds the agent's error text the engine keeps (raw, escaped
// bytes): enough for any CLI's message, small enough for a Pod condition.
const maxErrText = 1024

// errText holds raw (escaped) JSON string contents without allocating.
type errText struct {
	b [maxErrText]byte
	n int
}

func (t *errText) reset() { t.n = 0 }

// add appends raw bytes, as many as fit.
func (t *errText) add(raw []byte) { t.n += copy(t.b[t.n:], raw) }

func (t *errText) set(raw []byte) { t.reset(); t.add(raw) }

func (t *errText) raw() []byte { return t.b[:t.n] }

// settleFailure records the final event's failure text: its head and text
// joined with ": ", else the last error note of the turn, else a generic text.
func (e *Engine) settleFailure(head, text []byte) {
	r := &e.f.ResultErr
	r.reset()
	r.add(bytes.TrimSpace(head))
	if t := bytes.TrimSpace(text); len(t) > 0 {
		if r.n > 0 {
			r.add([]byte(": "))
		}
		r.add(t)
	}
	if r.n == 0 {
		r.set(e.f.ErrNote.raw())
	}
	if r.n == 0 {
		r.set([]byte("the agent reported an error"))
	}
	e.f.Failed = true
}

// unescape decodes raw JSON string contents; text cut inside an escape
// loses the broken escape, and bytes that are not UTF-8 are replaced.
func unescape(raw []byte) string {
	var s string
	for cut := 0; cut <= 6 && cut <= len(raw); cut++ {
		q := make([]byte, 0, len(raw)+2)
		q = append(append(append(q, '"'), raw[:len(raw)-cut]...), '"')
		if json.Unmarshal(q, &s) == nil {
			return s
		}
	}
	return strings.ToValidUTF8(string(raw), "\uFFFD")
}
