package monitor

import (
	"slices"
	"time"
)

// Detector is one row of the detector table: everything the rest of the
// tree knows about a detector. The chain, the fault classes, the guard
// names with their defaults, parsing and validation, warnFirst's loop
// detectors, calibrate's columns and the manager's metric series are all
// derived from detectorTable; docs/design.md "Adding a detector or a format"
// is the checklist.
type Detector struct {
	// Name is the detector as reports, Pod conditions and metrics name it.
	Name string
	// Class is the fault class its trip raises; "" for a detector that
	// nudges (the run goes on).
	Class string
	// Guards are the knobs it reads, each with its default and rule.
	Guards []Guard

	at    phase // the point of the fold at which check is judged
	check check
	// reset empties the detector's count once warnFirst warned the agent
	// (the next matching call counts 1); a detector with one is a loop
	// detector.
	reset func(e *Engine)
	// again makes an audited detector's count start over after a
	// would-trip where it has no reset (docs/policies.md#audit): the next
	// would-trip needs as much again. A detector with neither records its
	// first would-trip only (a whole-turn bound, the end of input).
	again func(e *Engine)
}

// Nudges says whether the detector's verdict is a nudge: said, and the run
// goes on. Every other detector's trip ends the turn.
func (d Detector) Nudges() bool { return d.Class == "" }

// AtCall says whether the detector trips at a tool call: the call the
// agent's pre-tool hook can refuse before it runs (docs/nudges.md).
func (d Detector) AtCall() bool { return d.at == atCall }

// Loop says whether warnFirst may turn the detector's first trip of a turn
// into a warning.
func (d Detector) Loop() bool { return d.reset != nil }

// detectorTable is the one list of detectors, in chain order: the
// evaluation order within one event (docs/design.md "Order within one
// event"): degeneration, repetition; each tool call in order (step budget,
// identical calls, cycles); each answer (repeated errors); spend; the stop
// reason; the silent-run nudge. Repetition is judged before silence, so an
// agent doing both is stopped, not nudged.
var detectorTable = [...]Detector{
	{Name: DetectorStall, Class: ClassStalled, at: atClock, check: stall, Guards: []Guard{
		{Name: "stallTimeout", Kind: GuardDuration, def: Duration(10 * time.Minute),
			Help:  "Stall: longest silence while the model is generating before `stalled` trips.",
			field: func(g *Guards) any { return &g.StallTimeout }, measure: gapWhile(false)},
		{Name: "toolTimeout", Kind: GuardDuration, def: Duration(30 * time.Minute),
			Help:  "Stall: longest silence while a tool call is outstanding before `stalled` trips.",
			field: func(g *Guards) any { return &g.ToolTimeout }, measure: gapWhile(true)},
	}, again: func(e *Engine) { // the silence starts over at the moment judged
		e.f.LastTime, e.st.Gap = e.f.LastTime.Add(e.st.Gap), 0
	}},
	{Name: DetectorDegeneration, Class: ClassDegenerate, at: atDelta, check: degeneration, Guards: []Guard{
		{Name: "whitespaceDeltas", Kind: GuardCount, def: 128, TripsAtLimit: true,
			Help:  "Degeneration: this many whitespace-only text/thinking deltas in a row trip `degenerate`.",
			field: func(g *Guards) any { return &g.WhitespaceDeltas }, measure: counter(func(s *State) int { return s.WhitespaceDeltas })},
		{Name: "whitespaceBytes", Kind: GuardCount, def: 8192, TripsAtLimit: true,
			Help:  "Degeneration: this many bytes of consecutive whitespace-only deltas trip `degenerate`.",
			field: func(g *Guards) any { return &g.WhitespaceBytes }, measure: counter(func(s *State) int { return s.WhitespaceBytes })},
	}, again: func(e *Engine) { e.st.WhitespaceDeltas, e.st.WhitespaceBytes = 0, 0 }},
	{Name: DetectorRepetition, Class: ClassDegenerate, at: atDelta, check: repetition, Guards: []Guard{
		{Name: "repeatedTextBytes", Kind: GuardCount, def: 4096, TripsAtLimit: true,
			Help:  "Repetition: this many bytes of streamed text repeating one pattern of 1 to 256 bytes trip `degenerate`.",
			field: func(g *Guards) any { return &g.RepeatedTextBytes }, measure: counter(func(s *State) int { return s.RepeatBytes })},
	}, again: func(e *Engine) { // the message's text runs start over
		e.f.Msg.Rep, e.f.ModelRep = [2]repeatTracker{}, [2]repeatTracker{}
		e.st.RepeatBytes, e.st.RepeatPeriod = 0, 0
	}},
	{Name: DetectorStepBudget, Class: ClassRunaway, at: atCall, check: stepBudget, Guards: []Guard{
		{Name: "stepBudget", Kind: GuardCount, def: 256, WholeTurn: true,
			Help:  "Step budget: most tool calls one turn may start; the next one trips `runaway`.",
			field: func(g *Guards) any { return &g.StepBudget }, measure: counter(func(s *State) int { return s.Steps })},
	}},
	{Name: DetectorIdenticalCalls, Class: ClassRunaway, at: atCall, check: identicalCalls, Guards: []Guard{
		{Name: "identicalCalls", Kind: GuardCount, def: 4, TripsAtLimit: true,
			Help:  "Identical calls: this many byte-identical tool calls in a row trip `runaway`.",
			field: func(g *Guards) any { return &g.IdenticalCalls }, measure: counter(func(s *State) int { return s.Streak })},
	}, reset: func(e *Engine) { e.st.Streak, e.f.LastSig = 0, 0 }},
	// Cycles are off until calibrate says a team's healthy turns allow them.
	{Name: DetectorCycles, Class: ClassRunaway, at: atCall, check: cycles, Guards: []Guard{
		{Name: "cycleRepeats", Kind: GuardCount, def: 0, Least: 2, TripsAtLimit: true, // one copy of a sequence is no cycle
			Help:  "Cycles: a sequence of 2 to 5 tool calls (not all the same) repeated this many times in a row trips `runaway` (A B A B A B A B is 2 calls repeated 4 times); 0 (off) or at least 2. Run `calibrate` on healthy streams before switching it on.",
			field: func(g *Guards) any { return &g.CycleRepeats }, measure: counter(func(s *State) int { return s.Cycle })},
	}, reset: func(e *Engine) {
		e.f.X.Cyc = cycleTrack{}
		e.st.Cycle, e.st.CyclePeriod = 0, 0
	}},
	{Name: DetectorRepeatedErrors, Class: ClassRunaway, at: atAnswer, check: repeatedErrors, Guards: []Guard{
		{Name: "errorRepeats", Kind: GuardCount, def: 6, TripsAtLimit: true,
			Help:  "Repeated errors: this many error answers in a row with the same text trip `runaway`.",
			field: func(g *Guards) any { return &g.ErrorRepeats }, measure: counter(func(s *State) int { return s.ErrorStreak })},
	}, reset: func(e *Engine) { e.st.ErrorStreak = 0 }},
	{Name: DetectorSpend, Class: ClassOverspend, at: atCost, check: spend, Guards: []Guard{
		{Name: "maxCostUSD", Kind: GuardCost, WholeTurn: true, // no default: no cap
			Help:  "Spend cap in USD for a whole run (decimal string, e.g. \"5.00\"); empty leaves the spend guard off.",
			field: func(g *Guards) any { return &g.MaxCostUSD }, measure: func(_, s *State) (int64, bool) { return int64(s.Cost), true }},
	}},
	{Name: DetectorBudget, Class: ClassOverspend, at: atCost, check: budget},
	{Name: DetectorLengthStop, Class: ClassLength, at: atFinish, check: lengthStop},
	{Name: DetectorSilentRun, at: atMessageEnd, check: silentRun, Guards: []Guard{
		{Name: "silentTurns", Kind: GuardCount, def: 12,
			Help:  "Silent run: a nudge after this many tool-only model messages since the last one that spoke.",
			field: func(g *Guards) any { return &g.SilentTurns }, measure: counter(func(s *State) int { return s.Silent })},
	}},
}

// settingGuards are the guards no one detector owns: they change how the
// detectors count or what a verdict does.
var settingGuards = []Guard{
	{Name: "worldTools", Kind: GuardTools,
		Help:  "Tools whose successful answer means \"the world moved\" (e.g. run_tests): it resets the identical-call streak.",
		field: func(g *Guards) any { return &g.WorldTools }},
	{Name: "answerAware", Kind: GuardBool, def: false,
		Help:  "Answer-aware identity: an answer that differs from the previous identical call's restarts the identical-call streak and the cycle count.",
		field: func(g *Guards) any { return &g.AnswerAware }},
	{Name: "nudgeDelivery", Kind: GuardChoice, def: NudgeDeliveryNone, Choices: []string{NudgeDeliveryNone, NudgeDeliveryFile},
		Help:  "Nudges reach the agent too: \"none\" (Event and Pod condition only) or \"file\" (/run/turnwatch/nudges.jsonl, read by the agent CLI's hook through /run/turnwatch/bin/turnwatch-hook; docs/nudges.md).",
		field: func(g *Guards) any { return &g.NudgeDelivery }},
	{Name: "warnFirst", Kind: GuardBool, def: false,
		Help:  "Where nudges are delivered, a turn's first loop trip (identical calls, cycles, repeated errors) becomes a warning that names the loop; its count starts over, and the next one trips.",
		field: func(g *Guards) any { return &g.WarnFirst }},
	{Name: "refuse", Kind: GuardBool, def: true, hook: true,
		Help:  "Where nudges are delivered, the agent's pre-tool hook refuses the call that trips a stopping detector before the CLI runs it, and ends the CLI's turn (docs/nudges.md).",
		field: func(g *Guards) any { return &g.Refuse }},
	{Name: "refuseWait", Kind: GuardDuration, def: Duration(2 * time.Second), Most: MaxRefuseWait, hook: true,
		Help:  "How long the pre-tool hook waits for the sidecar's verdict on its call (at most 5s); past it the call runs (fail open).",
		field: func(g *Guards) any { return &g.RefuseWait }},
}

// Detectors returns the detector table, in chain order.
func Detectors() []Detector { return slices.Clone(detectorTable[:]) }

// AllGuards returns every guard: the detectors' in table order, then the
// settings.
func AllGuards() []Guard { return slices.Clone(allGuards) }

var allGuards = func() []Guard {
	var out []Guard
	for _, d := range detectorTable {
		out = append(out, d.Guards...)
	}
	return append(out, settingGuards...)
}()

// detectorNamed finds a detector's row; nil for an unknown name.
func detectorNamed(name string) *Detector {
	for i := range detectorTable {
		if detectorTable[i].Name == name {
			return &detectorTable[i]
		}
	}
	return nil
}

// counter measures a count guard by the State counter it bounds.
func counter(n func(s *State) int) func(before, after *State) (int64, bool) {
	return func(_, s *State) (int64, bool) { return int64(n(s)), true }
}

// gapWhile measures a silence guard: the gap before a line, while a tool
// call was outstanding (toolTimeout) or while the model was generating
// (stallTimeout).
func gapWhile(tool bool) func(before, after *State) (int64, bool) {
	return func(before, s *State) (int64, bool) {
		return int64(s.Gap), (before.Outstanding > 0) == tool
	}
}
