package monitor

import "strconv"

// DetectorStepBudget names the step budget
// in reports, conditions and metrics (docs/design.md#step-budget).
const DetectorStepBudget = "stepBudget"

// stepBudget trips runaway when the turn starts more tool calls than the
// budget: the 257th step exceeds 256 (strict where it bounds).
func stepBudget(s *State) (reason, message string, failed bool) {
	b := s.Guards.StepBudget
	if b == 0 || s.Steps <= b {
		return "", "", false
	}
	return DetectorStepBudget, "exceeded " + strconv.Itoa(b) + " steps", true
}
