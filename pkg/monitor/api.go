package monitor

import (
	"fmt"
	"slices"

	"turnwatch.dev/turnwatch/pkg/agents"
)

// Fault classes, as docs/design.md#fault-classes spells them.
const (
	ClassRunaway    = "runaway"
	ClassStalled    = "stalled"
	ClassDegenerate = "degenerate"
	ClassOverspend  = "overspend"
	ClassLength     = "length"
)

// ClassOf returns the fault class a detector raises (its row of the
// detector table); "" for silentRun, which nudges, and for unknown names.
func ClassOf(detector string) string {
	if d := detectorNamed(detector); d != nil {
		return d.Class
	}
	return ""
}

// Formats the engine reads (each a CLI's of agents.CLIs, with its parser
// in formats), and auto.
const (
	FormatPi       = "pi"
	FormatClaude   = "claude"
	FormatCodex    = "codex"
	FormatOpencode = "opencode"
	FormatGemini   = "gemini"
	FormatAuto     = agents.Auto
)

// Formats lists the format names New accepts: the CLIs' table's, then auto.
var Formats = append(agents.Formats(), FormatAuto)

// Stop reasons after normalization (docs/design.md#stop-reasons).
const (
	StopEnd     = "end"
	StopToolUse = "tool_use"
	StopLength  = "length"
	StopError   = "error"
	StopAborted = "aborted"
)

// Options configure an Engine.
type Options struct {
	// Format is one of Formats; "" means auto. With auto, Report.Format
	// names the format recognised from the first lines ("auto" until then).
	Format string
	// Guards are the detector knobs. A zero Guards means DefaultGuards (a
	// caller that forgot them); ParseGuards merges a subset over defaults.
	Guards Guards
	// Prices price token-only formats (DefaultPrices when empty).
	Prices Prices
	// PriorCostUSD is what earlier turns of the run cost, a decimal string;
	// it is added to this turn's cost for the spend cap only: the report's
	// cost is this turn's own.
	PriorCostUSD string
	// Audit names the detectors whose trips only record
	// (docs/policies.md#audit): a would-trip, and the turn goes on.
	Audit []string
	// Metered says a model gateway stands between the agent and its model
	// (docs/gateway.md): the turn's cost is then what FeedModel's message
	// ends priced, and the stream's own figure is kept beside it
	// (Report.StreamCostUSD). Without it FeedModel's usage is ignored.
	Metered bool
	// Budget names the policy whose budget BudgetLeftUSD is
	// ("TurnPolicy/NAME"), for the budget trip's message; "" says "the
	// namespace's budgets".
	Budget string
	// BudgetLeftUSD is what the namespace's budgets had left when the turn
	// started, a decimal string (the least of them); the budget detector
	// trips once the turn's cost passes it. "" when no budget applies.
	BudgetLeftUSD string
}

// Trip is a detector's verdict that the turn must end.
type Trip struct {
	Class    string `json:"class"`
	Detector string `json:"detector"`
	Message  string `json:"message"`
	// Line is the 1-based input line of the event that tripped.
	Line int `json:"line"`
}

// Nudge is a verdict that is said and the run goes on: the silent-run nudge
// (once per streak), or with warnFirst the warning that replaced a turn's
// first loop trip. Detector names which.
type Nudge struct {
	Detector string `json:"detector"`
	Message  string `json:"message"`
	Line     int    `json:"line"`
}

// Verdicts is what one line (or the end of input) produced: nudges, and at
// most one trip that stops the turn.
type Verdicts struct {
	Nudges []Nudge
	Trip   *Trip
}

// Report is the replay report, field for field (docs/design.md#the-replay-report).
type Report struct {
	Format     string  `json:"format"`
	Lines      int     `json:"lines"`
	Steps      int     `json:"steps"`
	CostUSD    string  `json:"costUSD"` // this turn's own cost (Money's decimal string)
	StopReason string  `json:"stopReason"`
	Result     bool    `json:"result"`
	Trips      []Trip  `json:"trips"`
	Nudges     []Nudge `json:"nudges"`
	Unparsed   int     `json:"unparsed"`
	// Ignored counts known lines that carry nothing the detectors read
	// (docs/design.md#known-lines-that-carry-nothing), over the whole input like
	// Unparsed; they are not unparsed.
	Ignored int `json:"ignored"`
	// ResultError is the agent's own error text when its final result event
	// reports a failure (claude is_error, codex turn.failed, gemini status
	// error, pi agent_end after an error stop, opencode error); "" otherwise.
	ResultError string `json:"resultError"`
	// AgentSessionID is the CLI's own session id, the first its stream
	// named (claude system/init session_id, codex thread.started thread_id,
	// opencode sessionID, gemini init session_id, pi session header id), for
	// resuming the CLI's conversation; "" when none was seen.
	AgentSessionID string `json:"agentSessionID"`
	// DeltasHidden says the stream hides the model's deltas: the main
	// agent's first message that carried text or thinking completed before
	// the stream showed any delta (claude without --include-partial-messages,
	// codex exec --json, opencode run --format json). BlindDetectors cannot
	// see such a stream; DeltasHiddenMessage says so and names the fix. Once
	// set it stays set; a stream with deltas, or with no text or thinking,
	// never sets it, nor does one whose model's deltas the engine reads
	// from the model gateway (FeedModel, agents.CLI.ModelSide) before the
	// CLI prints the message.
	DeltasHidden bool `json:"deltasHidden,omitempty"`
	// WouldTrips are the audited detectors' would-trips (Options.Audit),
	// one per detector; absent when none.
	WouldTrips []WouldTrip `json:"wouldTrips,omitempty"`
	// CostMismatch is the first cost report the turn did not take as it
	// stood (docs/design.md#a-cost-never-goes-down): one below what was
	// counted already (the turn keeps the higher figure), or one no model
	// could produce (not counted); or, metered, the stream's final figure
	// disagreeing with the metered one (docs/design.md#metered-cost); ""
	// when it took them all.
	CostMismatch string `json:"costMismatch,omitempty"`
	// FormatMismatch says the stream does not read as its format
	// (docs/design.md#format-mismatch): most of its lines do not parse.
	// FormatFit is the format most of those lines read as ("" none).
	FormatMismatch string `json:"formatMismatch,omitempty"`
	FormatFit      string `json:"formatFit,omitempty"`
	// StreamCostUSD is the cost the stream reported when the model gateway
	// metered the turn (Options.Metered): CostUSD is then the metered cost,
	// and this the agent's word beside it. "" when not metered.
	StreamCostUSD string `json:"streamCostUSD,omitempty"`
}

func validFormat(f string) bool { return f == "" || slices.Contains(Formats, f) }

func (o Options) check() error {
	if !validFormat(o.Format) {
		return fmt.Errorf("format %q: must be one of %v", o.Format, Formats)
	}
	if err := o.Guards.Validate(); err != nil {
		return err
	}
	if _, err := auditBits(o.Audit); err != nil {
		return err
	}
	if o.PriorCostUSD != "" {
		if m, err := ParseMoney(o.PriorCostUSD); err != nil || m < 0 {
			return fmt.Errorf("priorCostUSD %q: must be a non-negative decimal string", o.PriorCostUSD)
		}
	}
	if o.BudgetLeftUSD != "" {
		if _, err := ParseMoney(o.BudgetLeftUSD); err != nil {
			return fmt.Errorf("budgetLeftUSD %q: must be a decimal string", o.BudgetLeftUSD)
		}
	}
	return nil
}
