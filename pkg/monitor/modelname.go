package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// modelName holds a model name without allocating.
type modelName struct {
	b [96]byte
	n int
}

// set keeps the decoded name (raw JSON string contents).
func (m *modelName) set(b []byte) {
	if bytes.IndexByte(b, '\\') < 0 {
		m.n = copy(m.b[:], b)
		return
	}
	m.n = jsonscan.UnescapeTo(m.b[:], b)
}

func (m *modelName) bytes() []byte { return m.b[:m.n] }
