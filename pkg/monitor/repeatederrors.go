package monitor

import "strconv"

// DetectorRepeatedErrors names repeated errors, a pattern detector,
// in reports, conditions and metrics (docs/design.md#repeated-errors).
const DetectorRepeatedErrors = "repeatedErrors"

// repeatedErrors trips runaway on the Rth consecutive tool answer that is
// an error with a byte-identical answer text, whatever the calls were (the
// 6th of 6). A successful answer or an error with another text resets the
// streak; the fold keeps it per agent, and a restated answer counts once.
func repeatedErrors(s *State) (reason, message string, failed bool) {
	r := s.Guards.ErrorRepeats
	if r == 0 || s.ErrorStreak < r {
		return "", "", false
	}
	return DetectorRepeatedErrors, "the same tool error " + strconv.Itoa(r) + " times in a row", true
}
