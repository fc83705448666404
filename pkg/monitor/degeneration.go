package monitor

import "strconv"

// DetectorDegeneration names degeneration
// in reports, conditions and metrics (docs/design.md#degeneration).
const DetectorDegeneration = "degeneration"

// degeneration trips degenerate on a run of consecutive whitespace-only
// text or thinking deltas: the 128th delta, or the delta that brings the
// run to 8192 bytes (inclusive). Any delta with a non-space character
// resets the run; empty deltas are ignored; the run carries across message
// boundaries.
func degeneration(s *State) (reason, message string, failed bool) {
	n, b := s.Guards.WhitespaceDeltas, s.Guards.WhitespaceBytes
	if (n == 0 || s.WhitespaceDeltas < n) && (b == 0 || s.WhitespaceBytes < b) {
		return "", "", false
	}
	return DetectorDegeneration, strconv.Itoa(s.WhitespaceDeltas) + " consecutive whitespace-only deltas (" +
		strconv.Itoa(s.WhitespaceBytes) + " bytes)", true
}
