package scriptedmodel

import "turnwatch.dev/turnwatch/pkg/agents"

// Exception is how a real CLI ends a scenario otherwise than the scenario's
// verdict says (agents.Exception); Verdict's has Blind or Own set.
type Exception = agents.Exception

// Verdict is what a turn of a CLI of format playing the scenario must get:
// the scenario's detector and class, or the CLI's own error ("", "agent-error")
// where its own guard ends it first, or nothing where its stream is blind
// (the CLI's exceptions in agents.CLIs).
func (s Scenario) Verdict(format string) (detector, class string, ex Exception) {
	ex = s.exception(format)
	switch {
	case ex.Blind != "":
		return "", "", ex
	case ex.Own != "":
		return "", "agent-error", ex
	}
	return s.Detector, s.Class, ex
}

// exception is the CLI's exception for the scenario, a blindness for want
// of deltas told as the CLI's stream's and the scenario's detector's.
func (s Scenario) exception(format string) Exception {
	c, _ := agents.Lookup(format)
	ex := c.Exceptions[s.Name]
	if ex.NoDeltas {
		ex = Exception{Blind: c.HidesDeltas() + ", no deltas: " + s.Detector + " is blind (DeltasHidden)"}
	}
	return ex
}
