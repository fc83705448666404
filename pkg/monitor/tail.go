package monitor

import "io"

// ReadTail reads the last lines of an agent's stream (the tail of its log,
// when the sidecar's own read was cut short) with every detector off, and
// reports what they say about the end of the turn: whether a final result
// event stands (Result), the agent's own failure (ResultError) and the last
// stop reason. Counts in the report cover the tail only. The tail must start
// at a line boundary; lines over maxLine count as unparsed.
func ReadTail(format string, tail io.Reader, maxLine int) (Report, error) {
	e, err := New(Options{Format: format})
	if err != nil {
		return Report{}, err
	}
	// Off: a detector judging a fragment of the stream proves nothing, and a
	// trip would end evaluation before the final result event.
	e.st.Guards, e.st.Cap = Guards{}, -1
	return Replay(e, tail, maxLine)
}
