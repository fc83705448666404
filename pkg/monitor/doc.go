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
// silentRun, stall, degeneration, spend, lengthStop, cycles, repeatedErrors,
// repetition; guards as in docs/design.md#thresholds-and-guards.
//
// Besides the verdicts, the Report states facts about the stream: the CLI's
// own session id (AgentSessionID) and whether the stream hides the model's
// deltas (DeltasHidden; deltas.go names the detectors that cannot see such a
// stream and the fix for each format).
package monitor
