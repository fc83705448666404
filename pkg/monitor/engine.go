package monitor

import (
	"bytes"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
	"turnwatch.dev/turnwatch/pkg/quote"
)

// Engine runs the detectors over one agent stream: a fold of normalized
// events into State plus the chain of checks. It is not safe for concurrent
// use; feed it from one goroutine. Steady state allocates nothing per line.
type Engine struct {
	opts   Options // as New read them (auto's restart builds from them again)
	format string  // requested: one of Formats
	parse  parser
	prices Prices
	world  map[string]struct{}
	// audit are the detectors whose trips only record (Options.Audit).
	audit detectorBits

	// st is what the checks see (state.go): the fold's counters, and the
	// guards, cap and prior cost from Options.
	st State
	// f is everything else the fold has folded (fold.go): with st, what a
	// checkpoint holds.
	f foldState

	// Per line: the event being applied and the parse's scratch.
	ev    event
	sc    jsonscan.Scanner
	obj   jsonscan.Obj
	canon []byte // the line rewritten without ASCII \u escapes, when it had any (internal/jsonscan/spelling.go)
	pi    piMemo // what the last pi message left for the next line's (format_pi_memo.go)
	// pc is what the parser of the line sees (format.go).
	pc  parseContext
	cur Verdicts // what the line produced
	// side is what the format's CLI hides on stdout and the model's side
	// shows (agents.CLI.ModelSide); esc is a model delta escaped as the
	// stdout parsers hand deltas over (model.go).
	side agents.ModelSide
	esc  []byte

	// Derived from the fold: the would-trips' counts' sum (audit.go), and
	// the price of the model last priced.
	wouldCount int
	priceCache struct {
		model modelName
		price ModelPrice
		known bool // the table prices model
		ok    bool
	}
}

// New builds an engine; zero Guards mean DefaultGuards, empty Prices mean
// DefaultPrices.
func New(opts Options) (*Engine, error) {
	if opts.Guards.isZero() {
		opts.Guards = DefaultGuards()
	}
	if len(opts.Prices.Models) == 0 {
		opts.Prices = defaultPrices() // shared read-only
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	e := &Engine{format: opts.Format, prices: opts.Prices, opts: opts}
	e.f.Live = true
	if e.format == "" {
		e.format = FormatAuto
	}
	if e.prices.sorted == nil {
		e.prices.index()
	}
	e.setFormat(e.format)
	e.audit, _ = auditBits(opts.Audit) // checked above
	e.st.Guards = opts.Guards
	e.st.Cap, _ = opts.Guards.maxCost()
	if opts.PriorCostUSD != "" {
		e.st.Prior, _ = ParseMoney(opts.PriorCostUSD)
	}
	e.st.Budget, e.st.BudgetName = budgetLeft(opts.BudgetLeftUSD), opts.Budget
	e.world = make(map[string]struct{}, len(opts.Guards.WorldTools))
	for _, t := range opts.Guards.WorldTools {
		e.world[t] = struct{}{}
	}
	e.f.Calls.init()
	return e, nil
}

// isZero says whether g is a zero Guards (a caller that forgot them):
// every guard at its zero value.
func (g Guards) isZero() bool {
	for _, gd := range allGuards {
		if !gd.hook && !gd.isZero(g) {
			return false
		}
	}
	return true
}

// Feed processes one input line (without its trailing newline). If the line
// carries the `kubectl logs --timestamps` prefix (RFC 3339 time and a space)
// the clock comes from it, else from now; a zero now means the line carries
// no clock information (replay of a file without timestamps). It returns
// what this line produced: nudges, and at most one trip that stops the turn.
// After a stopping trip nothing more is applied, but each line is still
// classified (unparsed, ignored) so that the report covers the whole input.
func (e *Engine) Feed(line []byte, now time.Time) Verdicts {
	e.f.Lines++
	e.cur = Verdicts{}
	if e.f.Finished {
		return e.cur
	}
	t, rest := splitTimestamp(line)
	if t.IsZero() {
		t = now
	}
	if !t.IsZero() && !e.f.Stopped && !e.judgeStall(t, e.f.Lines-1) { // a stall trip still classifies this line
		e.f.LastTime = t
	}
	if n := len(rest); n == 0 || rest[0] != '{' || rest[n-1] != '}' { // else there is nothing to trim
		rest = bytes.TrimSpace(rest)
	}
	if len(rest) == 0 {
		return e.cur // a blank line carries nothing and is not counted as unparsed
	}
	e.fold(rest)
	if cap(e.canon) > 1<<20 { // a rare long canonical copy does not stay for the rest of the stream
		e.canon = nil
	}
	return e.cur
}

// fold parses one line (prefix and spaces trimmed) and applies its event,
// or counts it unparsed. After a stopping trip it only classifies the line.
func (e *Engine) fold(line []byte) {
	e.ev = event{}
	decides := e.f.Active == "" // auto has not decided yet: a line it reads decides
	ok := e.parseLine(line)
	if !ok && e.rethink(line) {
		ok, decides = true, true
	}
	if !ok {
		e.f.Unparsed++
		e.f.Fit.count(line)
		e.judgeFormat(false)
		return
	}
	e.f.Parsed++
	if decides {
		e.f.AutoLines, e.f.AutoIgnored = 0, e.ev.ignored
	}
	e.f.AutoLines++
	if e.ev.ignored {
		e.f.Ignored++
	}
	if e.ev.sessionID != nil && e.f.AgentSession.n == 0 { // after a trip too: it is not a verdict
		e.f.AgentSession.take(e.ev.sessionID)
	}
	if !e.f.Stopped {
		e.apply()
	}
}

// FeedSkipped counts a line the LineReader skipped for being over the cap:
// it is a line (numbers stay right), it is unparsed, and its head (what
// Next returned) moves the clock like any timestamped line.
func (e *Engine) FeedSkipped(head []byte, now time.Time) Verdicts {
	e.f.Lines++
	e.cur = Verdicts{}
	if e.f.Finished {
		return e.cur
	}
	if t := e.clock(head, now); !t.IsZero() && !e.f.Stopped && !e.judgeStall(t, e.f.Lines-1) {
		e.f.LastTime = t
	}
	e.f.Unparsed++ // after a trip too
	e.judgeFormat(false)
	return e.cur
}

// clock is the time of a line: its kubectl prefix, else now.
func (e *Engine) clock(line []byte, now time.Time) time.Time {
	if t, _ := splitTimestamp(line); !t.IsZero() {
		return t
	}
	return now
}

// Tick judges the stall from the clock when no line arrives (live mode).
// The first Tick before any line starts the clock. Call it only once the
// input is caught up: lines replayed from the past carry old timestamps.
func (e *Engine) Tick(now time.Time) *Trip {
	e.cur = Verdicts{}
	if e.f.Stopped || e.f.Finished {
		return nil
	}
	if e.f.LastTime.IsZero() {
		e.f.LastTime = now
		return nil
	}
	e.judgeStall(now, e.f.Lines)
	return e.cur.Trip
}

// StallDue says whether a Tick at now would trip the stall, without
// judging: a live caller first makes sure the silence is real (a half-open
// log stream looks like silence).
func (e *Engine) StallDue(now time.Time) bool {
	if e.f.Stopped || e.f.Finished || !e.f.Live || e.f.LastTime.IsZero() {
		return false
	}
	st := e.st
	st.Gap = now.Sub(e.f.LastTime)
	_, _, due := stall(&st)
	return due
}

// judgeStall checks the silence between the last clock reading and t,
// attributing a trip to line (the last line before the gap).
func (e *Engine) judgeStall(t time.Time, line int) bool {
	if !e.f.Live || e.f.LastTime.IsZero() {
		return false
	}
	e.st.Gap = t.Sub(e.f.LastTime)
	return e.evaluate(atClock, line)
}

// Finish marks the end of input: it ends an open model message and judges
// the length stop. Calling it again does nothing.
func (e *Engine) Finish() Verdicts {
	e.cur = Verdicts{}
	if !e.f.Finished {
		e.judgeFormat(true) // after a trip too: the lines after it were classified
		e.judgeMetered()
	}
	if e.f.Finished || e.f.Stopped {
		e.f.Finished = true
		return e.cur
	}
	e.f.Finished = true
	if e.f.Live && e.f.Msg.Open && e.endMessage() {
		return e.cur
	}
	if e.f.Live && e.f.Agent != 0 { // the end of input ends the main agent's open message too: its stop is the turn's
		e.switchAgent(nil)
		if e.f.Msg.Open && e.endMessage() {
			return e.cur
		}
	}
	e.evaluate(atFinish, e.f.StopLine)
	return e.cur
}

// Report is the replay report (docs/design.md#the-replay-report) for what
// the engine has seen so far.
func (e *Engine) Report() Report {
	f := e.f.Active
	if f == "" {
		f = e.format
	}
	r := Report{
		Format: f, Lines: e.f.Lines, Steps: e.st.Steps, CostUSD: e.st.Cost.String(),
		StopReason: e.st.StopReason, Result: e.f.Result, Unparsed: e.f.Unparsed, Ignored: e.f.Ignored,
		Trips: append([]Trip{}, e.f.Trips...), Nudges: append([]Nudge{}, e.f.Nudges...),
		AgentSessionID: string(e.f.AgentSession.bytes()),
		DeltasHidden:   e.f.Deltas.hidden,
		WouldTrips:     e.WouldTrips(),
		CostMismatch:   e.f.CostNote,
		FormatMismatch: e.f.FormatNote,
		FormatFit:      e.f.FormatFits,
	}
	if e.opts.Metered {
		r.StreamCostUSD = e.f.Stream.String()
	}
	if e.f.Result && e.f.Failed {
		r.ResultError = unescape(e.f.ResultErr.raw())
	}
	return r
}

// Lines is how many lines the engine was fed (Report's Lines), without
// building the report.
func (e *Engine) Lines() int { return e.f.Lines }

// State returns a copy of the counters the checks see.
func (e *Engine) State() State { return e.st }

// evaluate runs the checks of one phase in chain order. A nudge is recorded
// and evaluation goes on, and so is an audited detector's would-trip; the
// first other failure trips and ends it.
func (e *Engine) evaluate(p phase, line int) bool {
	for i := range chainAt[p] {
		l := &chainAt[p][i]
		if e.f.Recorded&l.bit != 0 {
			continue // an audited detector that records once did
		}
		reason, msg, failed := l.check(&e.st)
		if !failed {
			continue
		}
		msg = quote.Text(msg) // a message may quote the agent's words
		if !l.nudge && e.audit&l.bit != 0 {
			e.wouldTrip(l, reason, msg, line)
			continue
		}
		if !l.nudge && e.warn(reason, msg, line) {
			continue
		}
		if l.nudge {
			n := Nudge{Detector: reason, Message: msg, Line: line}
			e.f.Nudges = append(e.f.Nudges, n)
			e.cur.Nudges = append(e.cur.Nudges, n)
			e.st.Nudged = true
			continue
		}
		t := &Trip{Class: ClassOf(reason), Detector: reason, Message: msg, Line: line}
		e.f.Trips = append(e.f.Trips, *t)
		e.cur.Trip = t
		e.f.Stopped = true
		e.judgeDeltasAtTrip()
		return true
	}
	return false
}
