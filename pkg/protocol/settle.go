package protocol

import "turnwatch.dev/turnwatch/pkg/monitor"

// Ending is how the agent's own final word settles its turn when no detector
// tripped (docs/design.md): the same rules whether the sidecar's summary
// tells it or the controller reads it from the log's tail itself.
type Ending int

const (
	// EndedUnsaid: no final word. The agent's exit decides: infra when it
	// broke, no-signal when it exited cleanly.
	EndedUnsaid Ending = iota
	// EndedLength: the last model message stopped at the output length
	// limit. The turn failed, class length, detector lengthStop, with
	// monitor.LengthStopMessage.
	EndedLength
	// EndedAgentError: a final result that reports the agent's own failure
	// (never a success). The turn failed, class agent-error, with the
	// agent's error text.
	EndedAgentError
	// EndedResult: a final result. The turn succeeded.
	EndedResult
)

// Ending is how s settles its turn, and the text of the fault when it failed.
// The rules go in order: a length stop, then a result that reports an error,
// then a result. An audited length stop (a lengthStop would-trip) is no
// ending of its own: the agent's final word settles the turn.
func (s Summary) Ending() (Ending, string) {
	switch {
	case s.StopReason == monitor.StopLength && !s.audited(monitor.DetectorLengthStop):
		return EndedLength, monitor.LengthStopMessage
	case s.Result && s.ResultError != "":
		return EndedAgentError, s.ResultError
	case s.Result:
		return EndedResult, ""
	}
	return EndedUnsaid, ""
}
