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
}

// chain is the evaluation order, one visible list. Within one event the
// fold reaches the phases in this order too
// (docs/design.md#order-within-one-event): degeneration, repetition; each tool call in
// order (step budget, identical calls, cycles); each answer (repeated
// errors); spend; the stop reason; the silent-run nudge.
// Repetition is judged before silence, so an agent doing both is stopped,
// not nudged. The first failing check that stops the turn ends evaluation.
var chain = [...]link{
	{at: atClock, check: stall},
	{at: atDelta, check: degeneration},
	{at: atDelta, check: repetition},
	{at: atCall, check: stepBudget},
	{at: atCall, check: identicalCalls},
	{at: atCall, check: cycles},
	{at: atAnswer, check: repeatedErrors},
	{at: atCost, check: spend},
	{at: atFinish, check: lengthStop},
	{at: atMessageEnd, check: silentRun, nudge: true},
}

// chainAt is the chain split by phase, each in chain order: the fold
// judges one phase at a time.
var chainAt = func() (by [numPhases][]link) {
	for _, l := range chain {
		by[l.at] = append(by[l.at], l)
	}
	return by
}()
