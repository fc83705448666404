// Package monitor is turnwatch's detector engine: agent stream formats in,
// trips and nudges out. It is a pure fold over the normalized event stream
// plus an injected clock, so the same stream gives the same verdicts on
// replay, in the sidecar, and after a restart. It has no Kubernetes imports.
//
// The engine reads one line at a time (Feed), normalizes it into an event
// with a hand-written zero-allocation JSON scanner (deltas are never stored
// or decoded whole), folds the event into small counters (State), and runs
// an ordered chain of small pure checks (see chain.go) at fixed points of the
// fold. Names follow docs/design.md: detectors stepBudget, identicalCalls,
// silentRun, stall, degeneration, spend, budget, lengthStop, cycles,
// repeatedErrors, repetition; guards as in docs/design.md#thresholds-and-guards.
//
// Where a model gateway stands between the agent and its model, the engine
// also reads the model's own stream (FeedModel, model.go): the turn's cost
// metered from the provider's usage, and the deltas and stop reasons a
// CLI's stdout hides (docs/design.md#the-models-side).
//
// Besides the verdicts, the Report states facts about the stream: the CLI's
// own session id (AgentSessionID) and whether the stream hides the model's
// deltas (DeltasHidden; deltas.go names the detectors that cannot see such a
// stream and the fix for each format).
package monitor
