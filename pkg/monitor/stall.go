package monitor

// DetectorStall names the stall
// in reports, conditions and metrics (docs/design.md#stall).
const DetectorStall = "stall"

// stall trips stalled when the silence is strictly longer than its budget:
// toolTimeout while a tool call is outstanding, stallTimeout while the
// model is generating. The fold judges the gap before the line that ends it
// (or from the clock alone, Tick), never after the turn ended.
func stall(s *State) (reason, message string, failed bool) {
	budget, while := s.Guards.StallTimeout, "the model was generating"
	if s.Outstanding > 0 {
		budget, while = s.Guards.ToolTimeout, "a tool call was outstanding"
	}
	if budget == 0 || s.Gap <= budget.D() {
		return "", "", false
	}
	return DetectorStall, "no output for more than " + budget.String() + " while " + while, true
}
