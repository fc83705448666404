package monitor

import "time"

// Engine runs the detectors over one agent stream. It is not safe for
// concurrent use; the sidecar feeds it from one goroutine.
type Engine struct {
	opts   Options
	format string
	lines  int
	trips  []Trip
	nudges []Nudge
}

// New builds an engine; zero Guards mean DefaultGuards, empty Prices mean
// DefaultPrices.
func New(opts Options) (*Engine, error) {
	if opts.Guards.isZero() {
		opts.Guards = DefaultGuards()
	}
	if len(opts.Prices.Models) == 0 {
		opts.Prices = DefaultPrices()
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	f := opts.Format
	if f == "" {
		f = FormatAuto
	}
	return &Engine{opts: opts, format: f}, nil
}

// Feed processes one input line (without its trailing newline). If the line
// carries the `kubectl logs --timestamps` prefix (RFC 3339 time and a space)
// the clock comes from it, else from now; a zero now means "no clock
// information" (replay of an untimestamped file). It returns what this line
// produced: nudges, and at most one trip that stops the turn.
func (e *Engine) Feed(line []byte, now time.Time) Verdicts {
	e.lines++
	return Verdicts{}
}

// Tick judges the stall from the clock when no line arrives (live mode).
func (e *Engine) Tick(now time.Time) *Trip { return nil }

// Finish marks the end of input and judges the length stop.
func (e *Engine) Finish() Verdicts { return Verdicts{} }

// Report is SPEC.md's replay object for what the engine has seen so far.
func (e *Engine) Report() Report {
	return Report{Format: e.format, Lines: e.lines, CostUSD: "0.00", Trips: []Trip{}, Nudges: []Nudge{}}
}

func (g Guards) isZero() bool {
	return g.StepBudget == 0 && g.IdenticalCalls == 0 && g.SilentTurns == 0 && g.StallTimeout == 0 &&
		g.ToolTimeout == 0 && g.WhitespaceDeltas == 0 && g.WhitespaceBytes == 0 && g.WorldTools == nil && g.MaxCostUSD == ""
}
