package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// modelName holds a model name without allocating.
type modelName struct {
	B [96]byte
	N int
}

// set keeps the decoded name (raw JSON string contents).
func (m *modelName) set(b []byte) {
	if bytes.IndexByte(b, '\\') < 0 {
		m.N = copy(m.B[:], b)
		return
	}
	m.N = jsonscan.UnescapeTo(m.B[:], b)
}

func (m *modelName) bytes() []byte { return m.B[:m.N] }
