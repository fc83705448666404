package monitor

import (
	"bytes"
	"strconv"
	"time"

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

// message is the open model message.
type message struct {
	Open     bool
	ID       uint64
	Speaks   bool // carried non-space text
	Calls    int  // tool calls first seen in it
	Stop     string
	HasStop  bool
	WeakStop bool // stop came from the stream's message_delta: the message's own line's replaces it
	StopLine int
	Toks     tokens
	Model    modelName
	// rep follows repeated text per kind (text, thinking); deltas marks a
	// message whose text streamed as deltas, so its whole blocks (a
	// restatement) are not read again; whole marks one of the main agent
	// that carried text or thinking (whitespace too) as whole blocks before any
	// delta (deltaSight), only while the stream's deltas are undecided.
	Rep    [2]repeatTracker
	Deltas bool
	Whole  bool
}

const (
	kindText     = 0
	kindThinking = 1
)

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
	if e.ev.sessionID != nil && e.f.AgentSession.N == 0 { // after a trip too: it is not a verdict
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

// apply folds the current event into State in the order within one event
// (docs/design.md#order-within-one-event): degeneration, repetition; each
// tool call in order; each answer; spend; the stop reason; the silent-run
// nudge. It returns as soon as a check stops the turn.
func (e *Engine) apply() {
	ev := &e.ev
	if ev.start || ev.newSegment || ev.final {
		e.dropSubagents()
	} else {
		e.switchAgent(ev.agent)
	}
	if ev.newSegment {
		e.closeSegment()
		if len(ev.model) > 0 {
			e.f.SessionModel.set(ev.model)
		}
	}
	if ev.start {
		if e.f.Msg.Open { // an unfinished message of the attempt before: paid, not judged
			e.f.Seg, e.f.Open = e.f.Seg.Add(e.f.Open), 0
			e.f.Msg.Open = false
		}
		e.f.Live, e.f.Result = true, false
		e.f.Failed = false
		e.f.ErrNote.reset()
	}
	if !e.f.Live {
		return // after the final result: no steps, trips, nudges or cost
	}
	cliStop := e.f.CLIStop // the line before was a notice, and nothing came between
	e.f.CLIStop = ev.cliStop
	if ev.errNote != nil {
		e.f.ErrNote.set(ev.errNote)
	}
	if ev.endBefore && e.f.Msg.Open && e.endMessage() {
		return
	}
	if ev.msgID != nil {
		id := idHash(ev.msgID)
		if e.f.Msg.Open && e.f.Msg.ID != id && e.endMessage() {
			return
		}
		if !e.f.Msg.Open {
			e.openMessage()
			e.f.Msg.ID = id
		}
	}
	if ev.msgOpen && !e.f.Msg.Open {
		e.openMessage()
	}
	if ev.hasDelta && e.delta(ev.delta, ev.deltaText) {
		return
	}
	if ev.hasText && e.f.Msg.Open && hasText(ev.text) {
		e.f.Msg.Speaks = true
	}
	if ev.hasText && e.f.Msg.Open && e.block(ev.text, kindText) {
		return
	}
	if ev.hasThinking && e.f.Msg.Open && e.block(ev.thinking, kindThinking) {
		return
	}
	if ev.content != nil && e.content(ev.content, ev.contentComplete, ev.contentStrs) {
		return
	}
	for i := 0; i < ev.ncalls; i++ {
		if e.call(ev.calls[i]) {
			return
		}
	}
	for i := 0; i < ev.nresults; i++ {
		r := ev.results[i]
		if e.answer(r.id, r.name, r.isError, r.text) {
			return
		}
	}
	if ev.costKind != costNone && e.spend() {
		return
	}
	if ev.hasStop && e.f.Msg.Open && !(ev.weakStop && e.f.Msg.HasStop && !e.f.Msg.WeakStop) {
		e.f.Msg.Stop, e.f.Msg.HasStop, e.f.Msg.WeakStop, e.f.Msg.StopLine = ev.stop, true, ev.weakStop, e.f.Lines
	}
	if ev.turnStop != "" || ev.stopByResult {
		e.st.StopReason, e.f.StopLine = ev.turnStop, e.f.Lines
	}
	if ev.lastStop != "" && e.st.StopReason == "" { // the last message ended without one
		e.st.StopReason, e.f.StopLine = ev.lastStop, e.f.Lines
	}
	if (ev.msgEnd || ev.final) && e.f.Msg.Open && e.endMessage() {
		return
	}
	if ev.final {
		e.final(cliStop)
	}
}

// final ends the turn at its final result event. A failure it reports is
// the turn's; so is the CLI's own stop (cliStop: an error notice right
// before a result), even under a success result: that notice ended the
// turn, so it is not a line that carries nothing.
func (e *Engine) final(cliStop bool) {
	ev := &e.ev
	e.f.Live, e.f.Result = false, true
	if cliStop {
		e.f.Ignored--
	}
	switch {
	case ev.failed || ev.failOnErrorStop && e.st.StopReason == StopError:
		e.settleFailure(ev.errHead, ev.errText)
	case cliStop:
		e.settleFailure(nil, nil) // the notice's text (errNote)
		e.st.StopReason, e.f.StopLine = StopError, e.f.Lines
	}
}

// judgeDeltasAtTrip decides the stream's deltas on the main agent's open
// message when a trip ends the turn inside it: it is the turn's last.
func (e *Engine) judgeDeltasAtTrip() {
	m := &e.f.Msg
	if e.f.Agent != 0 {
		m = &e.f.Agents[0].Msg // parked
	}
	if m.Open {
		e.f.Deltas.judge(m)
	}
}

func (e *Engine) openMessage() {
	e.f.Msg = message{Open: true, Model: e.f.Msg.Model}
	e.f.Msgs++
}

// endMessage ends the open model message: its cost is committed, its stop
// reason becomes the turn's, and the silent-run streak walks on.
func (e *Engine) endMessage() bool {
	m := &e.f.Msg
	m.Open = false
	e.f.Seg = e.f.Seg.Add(e.f.Open)
	e.f.Open = 0
	if e.f.Agent == 0 { // the turn's stop reason is the main agent's
		e.f.Deltas.judge(m)
		e.st.StopReason, e.f.StopLine = "", e.f.Lines
		if m.HasStop {
			e.st.StopReason, e.f.StopLine = m.Stop, m.StopLine
		}
	}
	switch {
	case m.Speaks:
		e.st.Silent, e.st.Nudged = 0, false
	case m.Calls > 0:
		e.st.Silent++
		return e.evaluate(atMessageEnd, e.f.Lines)
	}
	return false // neither text nor tools: neither resets nor extends
}

// delta folds one text or thinking delta (raw, escaped) into the
// whitespace run.
func (e *Engine) delta(raw []byte, isText bool) bool {
	e.f.Deltas.seen = true // an empty delta too: the stream shows deltas
	if len(raw) == 0 {
		return false
	}
	only, n := wsOnly(raw)
	if !only {
		e.st.WhitespaceDeltas, e.st.WhitespaceBytes = 0, 0
		if isText && e.f.Msg.Open {
			e.f.Msg.Speaks = true
		}
	} else {
		e.st.WhitespaceDeltas++
		if e.st.WhitespaceBytes < 1<<40 {
			e.st.WhitespaceBytes += n
		}
	}
	kind := kindThinking
	if isText {
		kind = kindText
	}
	if !e.f.Msg.Deltas { // a message that streams deltas is read from them only: whole blocks read before them count for nothing
		e.f.Msg.Rep = [2]repeatTracker{}
	}
	e.f.Msg.Deltas = true
	e.repeat(raw, kind, true)
	return e.evaluate(atDelta, e.f.Lines)
}

// repeat folds streamed text of one kind into the open message's
// repeated-text run; without an open message there is nothing to count
// within.
func (e *Engine) repeat(raw []byte, kind int, delta bool) {
	e.st.RepeatBytes, e.st.RepeatPeriod = 0, 0
	if !e.f.Msg.Open || len(raw) == 0 {
		return
	}
	n := e.st.Guards.RepeatedTextBytes
	var run int64
	var p int
	if delta {
		run, p = e.f.Msg.Rep[kind].feedDelta(raw, n)
	} else {
		run, p = e.f.Msg.Rep[kind].feedRaw(raw, n/2)
	}
	e.st.RepeatBytes, e.st.RepeatPeriod = int(min(run, 1<<40)), p
}

// block folds a whole text or thinking block (formats without deltas, or
// a message that streamed none) into the repeated-text run.
func (e *Engine) block(raw []byte, kind int) bool {
	if e.f.Msg.Deltas || len(raw) == 0 {
		return false
	}
	if e.f.Agent == 0 && !e.f.Msg.Whole && !e.f.Deltas.decided() {
		e.f.Msg.Whole = true
	}
	e.repeat(raw, kind, false)
	if e.st.RepeatBytes == 0 {
		return false
	}
	return e.evaluate(atDelta, e.f.Lines)
}

// call folds one tool call: a step at the first sight of its id, the
// identity comparison once its arguments are complete.
func (e *Engine) call(c callRef) bool {
	var key uint64
	if len(c.id) == 0 {
		e.f.Anon++
		key = mix64(e.f.Anon ^ 0xa5a5a5a5a5a5a5a5)
	} else {
		key = idHash(c.id)
	}
	f, isNew, evicted := e.f.Calls.get(key)
	if evicted&callOutstanding != 0 {
		e.st.Outstanding--
	}
	if isNew {
		e.st.Steps++
		if e.f.Msg.Open {
			e.f.Msg.Calls++
		}
		if e.evaluate(atCall, e.f.Lines) {
			return true
		}
	}
	if !c.complete || f&callCompared != 0 {
		return false
	}
	f |= callCompared
	if f&callAnswered == 0 {
		f |= callOutstanding
		e.st.Outstanding++
	}
	if e.isWorld(c.name) {
		f |= callWorld
	}
	e.f.Calls.set(key, f)
	sig := callSig(c.name, c.args)
	if e.st.Streak > 0 && sig == e.f.LastSig {
		e.st.Streak++
	} else {
		e.f.LastSig, e.st.Streak = sig, 1
	}
	e.f.X.Seq++
	e.f.Calls.setSig(key, sig, e.f.X.Seq)
	e.f.X.Cyc.push(sig)
	e.st.Cycle, e.st.CyclePeriod = e.f.X.Cyc.best()
	return e.evaluate(atCall, e.f.Lines)
}

// answer folds a tool result: the call is no longer outstanding, and a
// successful answer of a worldTools tool resets the identical-call streak
// and the cycle count (the world moved). An answer marked as an error is a
// refusal: nothing ran, the streak stands. With answerAware, a successful
// answer that differs from the previous identical call's restarts both
// counts at its call. Then the repeated-error streak, judged on the
// answer; a restated answer counts once.
func (e *Engine) answer(id, name []byte, isError bool, text []byte) bool {
	key := idHash(id)
	ci, known := e.f.Calls.lookup(key)
	f := ci.F
	if known {
		if f&callOutstanding != 0 {
			e.st.Outstanding--
		}
		e.f.Calls.set(key, f&^callOutstanding|callAnswered)
		if f&callAnswered != 0 {
			return false // a restatement
		}
	}
	world := f&callWorld != 0 || len(name) > 0 && e.isWorld(name)
	if world && !isError {
		e.st.Streak, e.f.LastSig = 0, 0
		e.f.X.Cyc = cycleTrack{}
		e.st.Cycle, e.st.CyclePeriod = 0, 0
	}
	ans := answerHash(text)
	if e.st.Guards.AnswerAware && !isError && known && f&callCompared != 0 {
		e.answerAware(ci, ans)
	}
	if !isError {
		e.st.ErrorStreak = 0
		e.st.Answered++
		return false
	}
	if e.st.ErrorStreak > 0 && ans == e.f.X.LastErr {
		e.st.ErrorStreak++
	} else {
		e.st.ErrorStreak, e.f.X.LastErr = 1, ans
	}
	return e.evaluate(atAnswer, e.f.Lines)
}

// answerAware compares a successful answer with the last successful
// answer to the same signature; a new one restarts the identical-call
// streak and the cycle count at its call (docs/design.md#answer-aware-identity).
func (e *Engine) answerAware(ci callInfo, ans uint64) {
	x := &e.f.X
	slot := -1
	for i := range x.Answers {
		if x.Answers[i].Sig == ci.Sig && x.Answers[i].Sig != 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = x.NextAns
		x.NextAns = (x.NextAns + 1) % answerMemory
		x.Answers[slot] = answerSeen{Sig: ci.Sig, Ans: ans}
		return // no previous answer to compare with
	}
	moved := x.Answers[slot].Ans != ans
	x.Answers[slot].Ans = ans
	if !moved || ci.Seq <= 0 || ci.Seq > x.Seq {
		return
	}
	k := int(x.Seq - ci.Seq + 1) // calls from the answered one to the latest
	if ci.Sig == e.f.LastSig && e.st.Streak > k {
		e.st.Streak = k
	}
	x.Cyc.restart(k)
	e.st.Cycle, e.st.CyclePeriod = x.Cyc.best()
}

// answerHash identifies an answer's text: a raw JSON value compared as
// canonical JSON (raw string contents hash as a string), or nothing.
func answerHash(text []byte) uint64 {
	if len(text) == 0 {
		return combine(tagNull, 0)
	}
	return callSig(nil, text)
}

func (e *Engine) isWorld(name []byte) bool {
	if len(e.world) == 0 {
		return false
	}
	if bytes.IndexByte(name, '\\') >= 0 { // compare the decoded name
		var buf [256]byte
		name = buf[:jsonscan.UnescapeTo(buf[:], name)]
		_, ok := e.world[string(name)]
		return ok
	}
	_, ok := e.world[string(name)]
	return ok
}

// spend folds a cost report and judges the cap. A report no model could
// produce is not counted (plausible.go); one that would lower what was
// counted already leaves it (notBelow).
func (e *Engine) spend() bool {
	ev := &e.ev
	if why := e.implausible(); why != "" {
		e.noteCost("line " + strconv.Itoa(e.f.Lines) + ": " + why + ": not counted")
		return false
	}
	switch ev.costKind {
	case costMessage:
		e.f.Open = e.notBelow(e.f.Open, ev.cost)
	case costAdd:
		e.f.Seg = e.f.Seg.Add(ev.cost)
	case costSegment:
		e.f.Seg, e.f.Open = e.notBelow(e.f.Seg.Add(e.f.Open), ev.cost), 0
	case costTokens:
		if len(ev.model) > 0 {
			e.f.Msg.Model.set(ev.model)
		}
		e.f.Msg.Toks.merge(ev.toks, ev.toksSet)
		e.f.Open = e.notBelow(e.f.Open, e.priceTokens(e.f.Msg.Model.bytes(), e.f.Msg.Toks))
	case costTokensTotal:
		e.f.Seg, e.f.Open = e.notBelow(e.f.Seg.Add(e.f.Open), e.priceTokens(nil, ev.toks)), 0
	}
	e.st.Cost = e.f.Closed.Add(e.f.Seg).Add(e.f.Open).Add(e.f.OtherOpen)
	return e.evaluate(atCost, e.f.Lines)
}

// closeSegment ends a session of the stream (a new claude system/init, a
// new codex thread): its cost is kept, later reports start from zero.
func (e *Engine) closeSegment() {
	e.f.Closed = e.f.Closed.Add(e.f.Seg).Add(e.f.Open)
	e.f.Seg, e.f.Open = 0, 0
	e.f.Msg.Toks = tokens{}
}
