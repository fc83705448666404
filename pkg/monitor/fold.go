package monitor

import "time"

// foldState is what the fold has folded besides State: plain data, with
// exported fields so that a checkpoint encodes it whole (checkpoint.go). A
// field added here is checkpointed without more ado; what New derives from
// Options and the per-line scratch stay on Engine.
type foldState struct {
	Active string // the format being parsed ("" while auto has not decided)
	Calls  callSet

	Lines, Unparsed int
	Ignored         int // known lines that carry nothing (Report.Ignored)
	// Parsed counts the lines the format read, ignored ones included;
	// formatmismatch.go judges the stream by it and Unparsed.
	Parsed int
	// Whether the stream reads as its format (formatmismatch.go): what the
	// unparsed lines read as, and the note once it does not.
	Fit        formatFit
	FormatNote string
	FormatFits string // the format named in FormatNote
	// AutoLines counts the lines auto's format read since it decided, the
	// deciding line included, and AutoIgnored says that line was an
	// ignored one (formatmismatch.go, rethink).
	AutoLines    int
	AutoIgnored  bool
	Live, Result bool
	Stopped      bool // a trip ended evaluation
	Finished     bool
	StopLine     int // line of the event that set StopReason
	LastTime     time.Time
	Trips        []Trip
	Nudges       []Nudge
	// Would are the would-trips of the audited detectors, Recorded the
	// one-shot ones whose would-trip is recorded (audit.go).
	Would    []WouldTrip
	Recorded detectorBits
	Anon     uint64 // counter for calls without an id

	Msg     message // the open model message
	LastSig uint64

	// Per agent (agents.go): the current agent's pattern state, the parked
	// ones, and what their open messages cost.
	X         patternState
	Agent     int
	Tick      uint64
	Agents    agentSlots
	OtherOpen Money
	Subagents bool // a subagent slot is in use

	// The agent's own failure (docs/design.md#a-failure-the-agent-reports):
	// the last error note of the turn, and the final result
	// event's failure text once Failed is set.
	ErrNote, ResultErr errText
	Failed             bool
	// CLIStop: the last line was an error notice that, if the final
	// result comes next, is the CLI stopping its own turn (event.cliStop).
	CLIStop bool

	// Cost: the turn's own is Closed + Seg + Open (State.Prior, the earlier
	// turns', only counts against the cap).
	Closed Money // sessions of this stream that ended (a later start event)
	Seg    Money // the current session's committed cost
	Open   Money // the open model message's latest cost
	// Msgs counts the model messages the turn opened, every agent's: a
	// session's total covers no more (plausible.go).
	Msgs int64
	// CostNote is the first cost report the turn did not take as it stood
	// (Report.CostMismatch): one below what was counted already, or one no
	// model could produce.
	CostNote string

	SessionModel modelName // model named by a start event (claude, gemini)
	// AgentSession is the CLI's own session id: the first the stream named
	// (event.sessionID), kept after a trip and across reopened turns.
	AgentSession agentSessionID
	// Deltas is whether the stream shows the model's deltas or hides them
	// (Report.DeltasHidden), decided once (deltas.go).
	Deltas deltaSight

	// The model's side (model.go): with Options.Metered, the turn's cost
	// is Metered, what the model's messages cost as the gateway read them,
	// and Stream is the stream's own figure (Closed + Seg + Open +
	// OtherOpen when last reported). Where the CLI's stdout hides them,
	// ModelStop is the last model message's stop reason, ModelDeltas is
	// set once a model delta was taken, and ModelRep follows the open model
	// message's repeated text per kind.
	Metered, Stream Money
	ModelStop       string
	ModelDeltas     bool
	ModelRep        [2]repeatTracker
}
