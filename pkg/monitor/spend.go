package monitor

// DetectorSpend names in-turn spend
// in reports, conditions and metrics (docs/design.md#spend).
const DetectorSpend = "spend"

// spend trips overspend the moment the run's cost (earlier turns plus this
// turn so far) is strictly above the cap. No cap, no check. The message names
// both parts when there are earlier turns, since the turn's reported cost is
// its own only.
func spend(s *State) (reason, message string, failed bool) {
	total := s.Prior.Add(s.Cost)
	if s.Cap < 0 || total <= s.Cap {
		return "", "", false
	}
	spent := "spent $" + total.String()
	if s.Prior > 0 {
		spent += " (this turn $" + s.Cost.String() + ", earlier turns $" + s.Prior.String() + ")"
	}
	return DetectorSpend, spent + ", over the $" + s.Cap.String() + " cap", true
}
