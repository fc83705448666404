package monitor

// A check is one detector: a small pure function of State that says
// whether it fails, why (the detector name) and a legible message. It
// reads s and never changes it (a pointer: the fold judges a few checks
// on every delta, and State is some 300 bytes).
type check func(s *State) (reason, message string, failed bool)

// phase is the point of the fold at which a check is judged.
type phase uint8

const (
	atClock      phase = iota // before a line: the silence since the last one
	atDelta                   // after a text or thinking delta
	atCall                    // after each tool call (first sight, then complete arguments)
	atCost                    // after a cost report
	atFinish                  // at the end of input
	atMessageEnd              // after a model message ended
	atAnswer                  // after each tool answer
	numPhases
)

type link struct {
	at    phase
	nudge bool // a nudge is said and the run goes on; anything else stops the turn
	check check
	d     int          // the detector's row in detectorTable
	bit   detectorBits // bitOf(d)
}

// chain is the evaluation order: the detector table's (detectors.go), whose
// comment says why it is that order. The first failing check that stops
// the turn ends evaluation.
var chain = func() []link {
	out := make([]link, len(detectorTable))
	for i, d := range detectorTable {
		out[i] = link{at: d.at, nudge: d.Nudges(), check: d.check, d: i, bit: bitOf(i)}
	}
	return out
}()

// chainAt is the chain split by phase, each in chain order: the fold
// judges one phase at a time.
var chainAt = func() (by [numPhases][]link) {
	for _, l := range chain {
		by[l.at] = append(by[l.at], l)
	}
	return by
}()
