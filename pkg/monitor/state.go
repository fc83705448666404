package monitor

import "time"

// State is what the checks see: the small counters the fold keeps. Checks
// are pure functions of it.
type State struct {
	Guards Guards
	// Steps counts tool calls started in the turn (each call id once).
	Steps int
	// AgentCounters are the current agent's counters (agents.go).
	AgentCounters
	// Warned is set once warnFirst turned a loop trip of the turn into a
	// nudge: the next loop trip trips.
	Warned bool
	// WhitespaceDeltas and WhitespaceBytes measure the current run of
	// whitespace-only text or thinking deltas.
	WhitespaceDeltas int
	WhitespaceBytes  int
	// Cost is what this turn has cost, and nothing else.
	Cost Money
	// Prior is what the run's earlier turns cost; the spend cap weighs
	// Prior + Cost, but only Cost is reported as the turn's.
	Prior Money
	// Cap is the spend cap, negative for none.
	Cap Money
	// Budget is what the namespace's budgets had left when the turn
	// started, negative for none (Options.BudgetLeftUSD).
	Budget Money
	// BudgetName names whose budget it is (Options.Budget).
	BudgetName string
	// StopReason is the last model message's normalized stop reason.
	StopReason string
	// Outstanding counts tool calls whose arguments are complete and whose
	// result was not seen yet.
	Outstanding int
	// Gap is the silence being judged by the stall check.
	Gap time.Duration
	// Cycle is how many times in a row the longest-repeating sequence of
	// CyclePeriod (2..5) tool call signatures, not all the same, repeated
	// up to the last call (counting the first copy).
	Cycle, CyclePeriod int
	// Answered counts the tool answers of the turn that were not errors (a
	// call that ran: the CLI ran its hooks around it).
	Answered int
	// RepeatBytes is the longest periodic run of streamed text (period
	// RepeatPeriod, counting the first copy) the last delta or text block
	// reached within its message and kind; 0 when none spans two copies.
	// With the guard on, a delta's run is measured only once the message's
	// text could hold a run as long as the guard (0 before).
	RepeatBytes, RepeatPeriod int
}

// AgentCounters are the counters of State that each agent keeps for itself
// (docs/design.md#subagents): State holds the current agent's, and the
// engine parks the others' whole (agents.go). A per-agent counter the
// checks read goes here; one only the engine reads goes in patternState.
type AgentCounters struct {
	// Streak counts consecutive identical tool calls (by signature).
	Streak int
	// Silent counts tool-only model messages since the last one that spoke;
	// Nudged is set once the silent-run nudge was said for this streak.
	Silent int
	Nudged bool
	// ErrorStreak counts consecutive error answers with the same text.
	ErrorStreak int
}
