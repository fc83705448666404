package monitor

// DetectorLengthStop names the length stop
// in reports, conditions and metrics (docs/design.md#length-stop).
const DetectorLengthStop = "lengthStop"

// lengthStop fails a turn whose last model message stopped for the output
// length limit (pi "length", claude "max_tokens"), judged at the end of
// input: such a turn settles as failed with class length, not as success.
func lengthStop(s *State) (reason, message string, failed bool) {
	if s.StopReason != StopLength {
		return "", "", false
	}
	return DetectorLengthStop, LengthStopMessage, true
}

// LengthStopMessage is the length stop's text: the detector's, and the
// controller's when it settles a length stop from a summary or the log's
// tail (protocol.Summary.Ending).
const LengthStopMessage = "the last model message stopped at the output length limit"
