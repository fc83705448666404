package monitor

import "strconv"

// DetectorSilentRun names the silent tool run
// in reports, conditions and metrics (docs/design.md#silent-tool-run).
const DetectorSilentRun = "silentRun"

// silentRun nudges on the (N+1)th tool-only model message since the last
// message that spoke (the 13th after 12), once per streak. The fold walks
// back to the last message that spoke: whitespace-only text is not
// speaking, and a message with neither text nor tools neither resets nor
// extends the streak.
func silentRun(s *State) (reason, message string, failed bool) {
	n := s.Guards.SilentTurns
	if n == 0 || s.Nudged || s.Silent <= n {
		return "", "", false
	}
	return DetectorSilentRun, strconv.Itoa(s.Silent) +
		" tool-only model messages since the agent last spoke: nobody can see tool calls; report what you have", true
}
