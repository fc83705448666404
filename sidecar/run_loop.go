package sidecar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// runner is the in-Pod watchdog: one source of the agent's output, one
// engine, one reporter on the own Pod. The engine and the reporter are used
// under watchState's lock only.
type runner struct {
	cfg   Options
	src   source
	rep   *reporter
	log   logr.Logger
	clock clock.PassiveClock
	// tick is how often the loop looks at the clock when no line arrives.
	tick time.Duration
	// idle is how long the source must be quiet before a tick judges the
	// stall: a burst of lines (a replay after a restart, a resume after a
	// drop) carries old timestamps, and the real clock must not be held
	// against them before the sidecar caught up.
	idle time.Duration
	// confirmTicks is how many ticks a reopened log stream gets to bring a
	// line before a stall from the clock trips (see stallProbe).
	confirmTicks int
	// checkpointPeriod is the least time between two checkpoints.
	checkpointPeriod time.Duration
	// blindTold is set once the DeltasHidden condition went out.
	blindTold bool
	// pending are the nudges written for the agent whose delivery is not
	// known yet; hooksTold is set once HooksNotRun went out.
	pending   []pendingNudge
	hooksTold bool
	// costTold and formatTold are set once CostMismatch and
	// FormatMismatch went out (tellNotes).
	costTold, formatTold bool
	lookedAt             int // the turn's tool calls when the ack file was last read
	// stepsSeen is the turn's tool calls when countCalls last counted;
	// lineTime is the log's time of the line being fed (the sidecar's
	// clock for a source without one).
	stepsSeen int
	lineTime  time.Time
	// calls are the tool calls judged for the pre-tool hook.
	calls Calls
	// model is the gateway the sidecar serves (nil for none);
	// refusalTold is set once ConditionCallRefused went out.
	model       *servedModel
	refusalTold bool
}

// reopener is a source that can drop its connection and open a new one from
// where it stands (the pods/log source).
type reopener interface {
	Reopen()
	Opened() uint64
}

// stallProbe confirms a stall judged from the clock: a log stream left half
// open by the API server or the kubelet brings no line while the agent
// writes, which looks exactly like a stall. So before tripping, the sidecar
// reopens the stream from its cursor, and trips only if the new stream too
// brings no line for confirmTicks ticks. Any line ends the probe.
type stallProbe struct {
	asked  bool
	want   uint64 // the stream count that proves the reopen happened
	quiet  int    // ticks without a line since the reopened stream opened
	reopen reopener
}

// confirmed is called on each tick at which the stall is due; it says
// whether to trip now.
func (p *stallProbe) confirmed(need int) bool {
	if p.reopen == nil {
		return true // a source that cannot reopen: the silence is what it is
	}
	switch {
	case !p.asked:
		p.asked, p.want, p.quiet = true, p.reopen.Opened()+1, 0
		p.reopen.Reopen()
		return false
	case p.reopen.Opened() < p.want:
		return false // not reopened yet
	}
	p.quiet++
	return p.quiet > need
}

// reset ends a probe: a line arrived.
func (p *stallProbe) reset() { p.asked, p.quiet = false, 0 }

const (
	defaultTick = time.Second
	defaultIdle = time.Second
	// defaultConfirmTicks: a reopened stream gets two ticks (about 2 s) to
	// bring a line before a stall trips.
	defaultConfirmTicks = 2
	// filePoll is how often the stream file's end is read again; fileDonePoll
	// how often, while the file is quiet, the agent's state is read.
	filePoll     = 200 * time.Millisecond
	fileDonePoll = 2 * time.Second
)

// newKubeRunner builds the runner from the in-cluster credential (or
// cfg.Kubeconfig).
func newKubeRunner(cfg Options, log logr.Logger) (*runner, error) {
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "turnwatch-sidecar"
	client, err := newKubeClient(rc, cfg.clock())
	if err != nil {
		return nil, err
	}
	return newRunner(cfg, client, log), nil
}

// newRunner wires the source and the reporter on client, all on cfg's
// clock.
func newRunner(cfg Options, client *kubeClient, log logr.Logger) *runner {
	clk := cfg.clock()
	ps := &podStatus{client: client, namespace: cfg.Namespace, name: cfg.PodName}
	done := agentDoneFunc(ps, cfg.AgentContainer, defaultBackoff.refusalGrace, clk, log)
	var src source
	if cfg.StreamFile != "" {
		src = &fileSource{path: cfg.StreamFile, agentDone: done, poll: filePoll, donePoll: fileDonePoll,
			maxLine: cfg.MaxLine, log: log.WithName("file"), clock: clk}
	} else {
		src = &podLogSource{client: client, namespace: cfg.Namespace, pod: cfg.PodName, container: cfg.AgentContainer,
			agentDone: done, maxLine: cfg.MaxLine, backoff: defaultBackoff, log: log.WithName("podlog"), clock: clk}
	}
	rep := &reporter{pod: ps, run: runProgressOf(cfg, client), clock: clk, backoff: defaultBackoff, period: cfg.ProgressPeriod, log: log.WithName("report")}
	return &runner{cfg: cfg, src: src, rep: rep, log: log, clock: clk, tick: defaultTick, idle: defaultIdle, confirmTicks: defaultConfirmTicks,
		checkpointPeriod: defaultCheckpointPeriod}
}

// run watches the turn until its output is over, reports, and then waits for
// sigCtx: a native sidecar that exits is started again, so it stays until
// the kubelet stops it. After SIGTERM it reads for cfg.Drain more, makes the
// final evaluation, and gives the last writes cfg.WriteGrace.
func (r *runner) run(sigCtx context.Context) error {
	writeCtx, cancelWrites := context.WithCancel(context.WithoutCancel(sigCtx))
	defer cancelWrites()
	followCtx, cancelFollow := context.WithCancel(writeCtx)
	defer cancelFollow()
	returned, termDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(termDone)
		select {
		case <-sigCtx.Done():
			r.log.Info("terminating: reading what is left, then reporting", "drain", r.cfg.Drain.String())
			time.AfterFunc(r.cfg.Drain, cancelFollow)
			time.AfterFunc(r.cfg.Drain+r.cfg.WriteGrace, cancelWrites)
		case <-returned:
		}
	}()
	defer func() { close(returned); <-termDone }()

	if err := r.startModel(); err != nil {
		return r.fatal(writeCtx, err)
	}
	defer r.stopModel()
	if err := r.rep.load(writeCtx); err != nil {
		return r.fatal(writeCtx, err)
	}
	r.reportDrill()
	r.refuseIfTripped()
	if r.rep.over() {
		// An earlier run of this sidecar settled the turn: nothing to add.
		r.log.Info("the turn is already settled on the Pod; nothing more to report")
	} else if err := r.watch(followCtx, cancelFollow, writeCtx); err != nil {
		return r.fatal(writeCtx, err)
	}
	r.modelRead()
	r.afterVerdict(sigCtx, writeCtx)
	return nil
}

// fatal ends the sidecar with err; an error that retrying cannot fix is told
// on the Pod first (failLoudly).
func (r *runner) fatal(ctx context.Context, err error) error {
	if f := failureOf(err); f != nil {
		r.failLoudly(ctx, f)
		return f
	}
	return err
}

// watch feeds the engine until the output is over or a detector tripped.
// The follower's goroutine feeds each line itself (see watchState): a hand-off
// to another goroutine per line was a wake-up per line, which cost more than
// the engine (docs/performance.md, "Sidecar footprint"). The clock is judged
// on another goroutine, on a coarse ticker.
func (r *runner) watch(followCtx context.Context, stopFollow context.CancelFunc, writeCtx context.Context) error {
	r.installHook() // before the first line: the agent's first hook may run soon after
	var ck *checkpointer
	if _, ok := r.src.(resumer); ok && r.cfg.StateDir != "" {
		ck = newCheckpointer(r.cfg.StateDir, r.checkpointPeriod, r.clock, r.log.WithName("checkpoint"))
		if r.cfg.Guards.Refuses() {
			ck.calls = &r.calls
		}
	}
	eng, err := r.restore(ck)
	if err != nil {
		return err
	}
	w := &watchState{r: r, eng: eng, ck: ck, writeCtx: writeCtx, stop: stopFollow, lastSeen: r.clock.Now()}
	w.feeding, w.skip = r.openFeeding()
	defer w.feeding.release()
	w.probe.reopen, _ = r.src.(reopener)
	ticksDone, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		w.ticks(ticksDone)
	}()
	modelsDone, modelsRead := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(modelsRead)
		if r.model != nil {
			w.models(r.model.events, modelsDone)
		}
	}()
	followErr := r.src.Follow(followCtx, w.line)
	close(ticksDone)
	close(modelsDone)
	<-ticked
	<-modelsRead
	if !w.over { // the follower, the ticker and the models' reader are done: w is this goroutine's
		w.drainModels()
	}
	if w.over {
		return w.err // tripped, or a report failed for good
	}
	return r.finish(writeCtx, eng, followErr)
}

// errWatchOver ends the follower once a detector tripped.
var errWatchOver = errors.New("the watch is over")

// watchState is the engine and what goes with it, shared by the follower's
// goroutine (line) and the ticker's (tick) under mu.
type watchState struct {
	r        *runner
	eng      *monitor.Engine
	ck       *checkpointer
	writeCtx context.Context
	stop     context.CancelFunc // ends the follower

	mu           sync.Mutex
	lastSeen     time.Time
	wasConnected bool
	probe        stallProbe
	res          resultWatch
	over         bool  // tripped (or a report failed for good): nothing more is read
	err          error // what watch returns once over
	// feeding records the line being fed; skip is the line the sidecar
	// before was feeding when it ended (feeding.go).
	feeding *feeding
	skip    lineMark
}

// line feeds one line, on the follower's goroutine.
func (w *watchState) line(l streamLine) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return errWatchOver
	}
	r, eng := w.r, w.eng
	w.lastSeen = r.clock.Now()
	r.rep.readLag(l.Time, w.lastSeen)
	r.lineTime = l.Time
	if r.lineTime.IsZero() {
		r.lineTime = w.lastSeen
	}
	w.probe.reset()
	n, fp := eng.Lines()+1, lineFingerprint(l.Data, l.Cut)
	feed, parsed := eng.Feed, !l.Cut
	if l.Cut {
		feed = eng.FeedSkipped // as replay counts it: a line, unparsed; its head moves the clock
	}
	w.feeding.begin(n, fp)
	if w.skip.is(n, fp) {
		r.log.Info("skipping the line the sidecar was reading when it ended; it counts as unparsed", "line", n, "bytes", len(l.Data))
		feed, parsed, w.skip = eng.FeedSkipped, false, lineMark{}
	} else if crashHook != nil {
		crashHook(l.Data) // a test build's stand-in for a line that kills the sidecar
	}
	v := feed(l.Data, w.lastSeen)
	r.judgeCalls(eng, v.Trip, parsed)
	// What the line's bytes can make costly is done; the reports below are
	// bounded, and a kill while they are written (a restart, an eviction)
	// is no fault of the line's.
	w.feeding.end()
	if !w.report(v) {
		return errWatchOver
	}
	if w.ck != nil {
		w.ck.fed(eng, l.Cursor)
	}
	r.progress(w.writeCtx, eng)
	return nil
}

// report tells what a line or a model event produced; false once the
// watch is over (a trip, or a report that failed for good). Called with mu
// held.
func (w *watchState) report(v monitor.Verdicts) bool {
	r, eng := w.r, w.eng
	if err := r.wouldTrips(w.writeCtx, eng); err != nil {
		w.end(err)
		return false
	}
	if over, err := r.verdicts(w.writeCtx, eng, v); over || err != nil {
		w.end(err)
		return false
	}
	return true
}

// models feeds the model's side, as the gateway read it, until done.
func (w *watchState) models(events <-chan monitor.ModelEvent, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case ev := <-events:
			if !w.model(ev) {
				return
			}
		}
	}
}

// drainModels feeds the model's events left when the agent's output
// ended, and waits up to modelSettle for the answers still in flight (a
// CLI's title request may end after its last line): what was paid counts
// in the summary.
func (w *watchState) drainModels() {
	m := w.r.model
	if m == nil {
		return
	}
	deadline := time.Now().Add(modelSettle)
	for {
		w.feedQueued()
		if m.gw.Counts().InFlight == 0 || !time.Now().Before(deadline) {
			w.feedQueued() // an answer's end is queued before it leaves the count
			return
		}
		select {
		case ev := <-m.events:
			if !w.model(ev) {
				return
			}
		case <-time.After(modelPoll):
		}
	}
}

// feedQueued feeds the model events queued now.
func (w *watchState) feedQueued() {
	for {
		select {
		case ev := <-w.r.model.events:
			if !w.model(ev) {
				return
			}
		default:
			return
		}
	}
}

// modelSettle bounds how long the summary waits for answers still in
// flight when the output ended; modelPoll is how often it looks.
const (
	modelSettle = 2 * time.Second
	modelPoll   = 20 * time.Millisecond
)

// model feeds one model event; false once the watch is over.
func (w *watchState) model(ev monitor.ModelEvent) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return false
	}
	r, eng := w.r, w.eng
	v := eng.FeedModel(ev, r.clock.Now())
	if !w.report(v) {
		return false
	}
	if w.ck != nil {
		w.ck.changed(eng)
	}
	r.progress(w.writeCtx, eng)
	return true
}

// ticks judges the clock every r.tick until done.
func (w *watchState) ticks(done <-chan struct{}) {
	ticker := time.NewTicker(w.r.tick)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
			if !w.tick() {
				return
			}
		}
	}
}

// tick is one look at the clock; false once the watch is over.
func (w *watchState) tick() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return false
	}
	r, eng := w.r, w.eng
	now := r.clock.Now()
	connected := r.src.Connected()
	if connected && !w.wasConnected {
		w.lastSeen = now // a fresh stream first sends what it missed
	}
	w.wasConnected = connected
	if w.ck != nil {
		w.ck.flush(eng)
	}
	if connected && now.Sub(w.lastSeen) >= r.idle {
		// A due stall waits for the probe (a reopened stream); else
		// Tick judges it, and before any line starts the clock.
		if eng.StallDue(now) && !w.probe.confirmed(r.confirmTicks) {
			r.progress(w.writeCtx, eng)
			return true
		}
		seen := eng.WouldTripCount()
		if t := eng.Tick(now); t != nil {
			r.judgeCalls(eng, t, false)
			err := r.settleDeliveries(w.writeCtx, eng, true)
			if err == nil {
				err = r.tripped(w.writeCtx, eng, t)
			}
			w.end(err)
			return false
		}
		if eng.WouldTripCount() != seen { // an audited stall: its silence starts over, and so does the probe
			w.probe.reset()
			if err := r.wouldTrips(w.writeCtx, eng); err != nil {
				w.end(err)
				return false
			}
		}
	}
	if err := r.settleDeliveries(w.writeCtx, eng, false); err != nil {
		w.end(err)
		return false
	}
	r.progress(w.writeCtx, eng)
	r.tellRotated(w.writeCtx)
	r.rep.drillServed(w.writeCtx)
	w.res.check(w.writeCtx, r.rep, eng, w.lastSeen, now)
	return true
}

// end closes the watch with err (nil after a trip reported) and stops the
// follower. Called with mu held.
func (w *watchState) end(err error) {
	w.over, w.err = true, err
	w.stop()
}

// verdicts reports what one line produced; over is true after a trip.
func (r *runner) verdicts(ctx context.Context, eng *monitor.Engine, v monitor.Verdicts) (bool, error) {
	r.tellBlind(eng)
	if err := r.tellNotes(ctx, eng); err != nil {
		return false, err
	}
	if err := r.nudges(ctx, eng, v.Nudges); err != nil {
		return false, err
	}
	if v.Trip == nil {
		return false, nil
	}
	if err := r.settleDeliveries(ctx, eng, true); err != nil {
		return false, err
	}
	return true, r.tripped(ctx, eng, v.Trip)
}

// tripped reports a trip; nothing is reported after it, and the gateway
// refuses the agent's next model request.
func (r *runner) tripped(ctx context.Context, eng *monitor.Engine, t *monitor.Trip) error {
	r.refuse(t)
	r.log.Info("tripped", "class", t.Class, "detector", t.Detector, "message", t.Message, "line", t.Line)
	return r.rep.tripped(ctx, t.Detector, t.Message, progressOf(eng))
}

// tellBlind reports, once, that the stream hides the model's deltas, as
// soon as the engine decided it: with the sidecar's next write (a nudge, a
// trip, the result or the summary), not one of its own; the condition
// tells, it decides nothing.
func (r *runner) tellBlind(eng *monitor.Engine) {
	if r.blindTold || !eng.DeltasHidden() {
		return
	}
	r.blindTold = true
	format := eng.Report().Format
	r.log.Info("the stream hides the model's deltas", "format", format, "blind", monitor.BlindDetectors)
	r.rep.deltasHidden(monitor.DeltasHiddenMessage(format))
}

// rotationSource is a source that can tell that the log was rotated past
// the line it was reading (the pods/log source: follow_rotation.go).
type rotationSource interface{ LogRotated() string }

// tellRotated reports, once and at once, that the log was rotated past the
// line the sidecar was reading: lines may have been lost.
func (r *runner) tellRotated(ctx context.Context) {
	if rs, ok := r.src.(rotationSource); ok {
		if msg := rs.LogRotated(); msg != "" {
			r.log.Info("lagged past a log rotation", "message", msg)
			r.rep.logRotated(ctx, msg)
		}
	}
}

// progress writes the engine's progress when the throttle allows.
func (r *runner) progress(ctx context.Context, eng *monitor.Engine) {
	if r.rep.progressDue() {
		r.rep.progress(ctx, progressOf(eng))
	}
	r.rep.wouldCounts(ctx)
}

// finish makes the final evaluation once the output is over (or the drain
// after SIGTERM ended) and writes the summary, with a length stop if any.
func (r *runner) finish(ctx context.Context, eng *monitor.Engine, followErr error) error {
	if followErr != nil && !errors.Is(followErr, context.Canceled) {
		return fmt.Errorf("following the agent's output: %w", followErr)
	}
	v := eng.Finish()
	r.tellBlind(eng)
	r.tellRotated(ctx)
	if err := r.tellNotes(ctx, eng); err != nil {
		return err
	}
	if err := r.wouldTrips(ctx, eng); err != nil {
		return err
	}
	if err := r.nudges(ctx, eng, v.Nudges); err != nil {
		return err
	}
	if err := r.settleDeliveries(ctx, eng, true); err != nil {
		return err
	}
	s := protocol.SummaryOf(eng.Report())
	s.Complete = followErr == nil // the source read the stream to its end; else the drain cut it
	s.WouldTrips = r.rep.would.list
	var trip *desired
	if t := v.Trip; t != nil {
		r.log.Info("tripped at the end", "class", t.Class, "detector", t.Detector, "message", t.Message, "line", t.Line)
		c := protocol.TripCondition(t.Detector, t.Message)
		trip = &c
	}
	r.log.Info("finished", "steps", s.Steps, "costUSD", s.CostUSD(), "stopReason", s.StopReason, "result", s.Result,
		"lines", s.Lines, "unparsed", s.Unparsed, "ignored", s.Ignored, "resultError", s.ResultError, "agentSessionID", s.AgentSessionID, "drained", followErr != nil,
		"wouldTrips", len(s.WouldTrips))
	return r.rep.finished(ctx, s, trip)
}

// progressOf is the engine's count of steps and cost so far.
func progressOf(eng *monitor.Engine) protocol.Progress {
	st := eng.State()
	return protocol.Progress{Steps: int64(st.Steps), Cost: st.Cost, StreamCost: eng.StreamCost()}
}
