package monitor

// lengthStop fails a turn whose last model message stopped for the output
// length limit (pi "length", claude "max_tokens"), judged at the end of
// input: such a turn settles as failed with class length, not as success.
func lengthStop(s *State) (reason, message string, failed bool) {
	if s.StopReason != StopLength {
		return "", "", false
	}
	return DetectorLengthStop, "the last model message stopped at the output length limit", true
}
