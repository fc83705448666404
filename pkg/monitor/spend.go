package monitor

// spend trips overspend the moment the run's cost (earlier turns plus this
// turn so far) is strictly above the cap. No cap, no check.
func spend(s State) (reason, message string, failed bool) {
	if s.Cap < 0 || s.Cost <= s.Cap {
		return "", "", false
	}
	return DetectorSpend, "spent $" + s.Cost.String() + ", over the $" + s.Cap.String() + " cap", true
}
