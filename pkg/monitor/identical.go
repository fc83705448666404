package monitor

import "strconv"

// DetectorIdenticalCalls names identical calls
// in reports, conditions and metrics (docs/design.md#identical-calls).
const DetectorIdenticalCalls = "identicalCalls"

// identicalCalls trips runaway on the Kth consecutive tool call with a
// byte-identical name and arguments (canonical JSON), inclusive: the 4th of 4.
// The fold keeps the streak: a different signature resets it to 1, a
// restated call id neither extends nor breaks it, and a successful answer of
// a worldTools tool resets it to 0.
func identicalCalls(s *State) (reason, message string, failed bool) {
	k := s.Guards.IdenticalCalls
	if k == 0 || s.Streak < k {
		return "", "", false
	}
	return DetectorIdenticalCalls, "repeated an identical tool call " + strconv.Itoa(k) + " times", true
}
