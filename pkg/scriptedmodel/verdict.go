package scriptedmodel

import "turnwatch.dev/turnwatch/pkg/agents"

// Exception is how a real CLI ends a scenario otherwise than the scenario's
// verdict says (agents.Exception); Verdict's has Blind or Own set.
type Exception = agents.Exception

// Verdict is what a turn of a CLI of format playing the scenario must get:
// the scenario's detector and class, or the CLI's own error ("", "agent-error")
// where its own guard ends it first, or nothing where its stream is blind
// (the CLI's exceptions in agents.CLIs). modelSide says the model gateway
// stands between the CLI and its model (a drill, a metered run): the
// engine then reads what the stream hides from the model's side, and a
// blindness for want of deltas or stop reasons is none.
func (s Scenario) Verdict(format string, modelSide bool) (detector, class string, ex Exception) {
	ex = s.exception(format, modelSide)
	switch {
	case ex.Blind != "":
		return "", "", ex
	case ex.Own != "":
		return "", "agent-error", ex
	}
	return s.Detector, s.Class, ex
}

// exception is the CLI's exception for the scenario, a blindness for want
// of deltas or stop reasons told as the CLI's stream's and the scenario's
// detector's, or none where the model's side shows them.
func (s Scenario) exception(format string, modelSide bool) Exception {
	c, _ := agents.Lookup(format)
	ex := c.Exceptions[s.Name]
	side := c.ModelSide()
	switch {
	case ex.NoDeltas && modelSide && side.Deltas, ex.NoStop && modelSide && side.Stop:
		return Exception{}
	case ex.NoDeltas:
		return Exception{Blind: c.HidesDeltas() + ", no deltas: " + s.Detector + " is blind (DeltasHidden)"}
	case ex.NoStop:
		return Exception{Blind: c.HidesStop()}
	}
	return ex
}
