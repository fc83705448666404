package monitor

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"time"
)

// checkpointVersion changes whenever the snapshot's shape does; a
// checkpoint of another version is refused (the caller replays instead).
const checkpointVersion = 2 // 2: the pattern detectors, per-agent state

// snapshot is everything the fold has folded: the engine's state as plain
// data, without what New derives from Options (guards, prices, the spend
// cap, worldTools, the prior cost) and without per-line scratch. Its size
// is bounded: at most maxCalls call ids, two error texts, the trips and
// nudges of one turn.
type snapshot struct {
	Version  int
	Format   string // Options.Format, checked on restore
	Active   string
	St       State
	Flags    map[uint64]callInfo
	Ring     []uint64
	Next, N  int
	Lines    int
	Unparsed int
	Ignored  int // not in version 1 (which Restore refuses); a version-2 checkpoint written before it restores it as 0
	Live     bool
	Result   bool
	Stopped  bool
	Finished bool
	StopLine int
	LastTime time.Time
	Trips    []Trip
	Nudges   []Nudge
	Anon     uint64
	Msg      msgSnapshot
	LastSig  uint64
	ErrNote  []byte
	ResErr   []byte
	Failed   bool
	CLIStop  bool
	Closed   Money
	Seg      Money
	Open     Money
	Session  []byte
	// AgentSession was added after version 2 was written: an older
	// checkpoint restores it as "" (and the next id the stream names is kept).
	AgentSession []byte
	// DeltasSeen and DeltasHidden (deltaSight) were added after version 2
	// was written: an older checkpoint restores them as false, undecided (a
	// message that streamed deltas still never counts as hiding them).
	DeltasSeen, DeltasHidden bool
	// The current agent's pattern state, the parked agents (used slots only).
	X         patternState
	Agent     int
	Tick      uint64
	Agents    []agentSnapshot
	OtherOpen Money
	Subagents bool
	// Would and Recorded (audit.go) were added after version 2 was
	// written: an older checkpoint restores no would-trips.
	Would    []WouldTrip
	Recorded detectorBits
	// The stream's reading and its cost notes (formatmismatch.go,
	// plausible.go) were added after version 2 was written: an older
	// checkpoint restores them as nothing judged, nothing noted.
	Parsed      int
	Fit         formatFit
	FormatNote  string
	FormatFits  string
	AutoLines   int
	AutoIgnored bool
	Msgs        int64
	CostNote    string
}

type msgSnapshot struct {
	Open, Speaks, HasStop  bool
	WeakStop               bool
	ID                     uint64
	Calls, StopLine        int
	Stop                   string
	In, Out, CRead, CWrite int64
	Model                  []byte
	Rep                    [2]repeatTracker
	Deltas                 bool
	Whole                  bool // added after version 2 was written: false in an older checkpoint
}

type agentSnapshot struct {
	Slot           int
	Key, Tick      uint64
	Msg            msgSnapshot
	Open           Money
	Streak, Silent int
	LastSig        uint64
	Nudged         bool
	ErrStreak      int
	X              patternState
}

func snapMessage(m *message) msgSnapshot {
	return msgSnapshot{Open: m.open, Speaks: m.speaks, HasStop: m.hasStop, WeakStop: m.weakStop, ID: m.id, Calls: m.calls,
		StopLine: m.stopLine, Stop: m.stop, In: m.toks.input, Out: m.toks.output,
		CRead: m.toks.cacheRead, CWrite: m.toks.cacheWrite, Model: m.model.bytes(), Rep: m.rep, Deltas: m.deltas, Whole: m.whole}
}

func (s *msgSnapshot) message() message {
	m := message{open: s.Open, speaks: s.Speaks, hasStop: s.HasStop, weakStop: s.WeakStop, id: s.ID, calls: s.Calls,
		stopLine: s.StopLine, stop: s.Stop,
		toks: tokens{input: s.In, output: s.Out, cacheRead: s.CRead, cacheWrite: s.CWrite}, rep: s.Rep, deltas: s.Deltas, whole: s.Whole}
	m.model.set(s.Model)
	return m
}

// Checkpoint returns the engine's state, to be restored into an engine
// built with the same Options (Restore): the fold is deterministic, so the
// restored engine fed the lines after the checkpoint reaches the state an
// uninterrupted one would, even when the lines before it are gone (a
// rotated container log).
func (e *Engine) Checkpoint() ([]byte, error) {
	s := snapshot{
		Version: checkpointVersion, Format: e.format, Active: e.active, St: e.st,
		Flags: e.calls.flags, Ring: e.calls.ring[:], Next: e.calls.next, N: e.calls.n,
		Lines: e.lines, Unparsed: e.unparsed, Ignored: e.ignored, Live: e.live, Result: e.result, Stopped: e.stopped, Finished: e.finished,
		StopLine: e.stopLine, LastTime: e.lastTime, Trips: e.trips, Nudges: e.nudges, Anon: e.anon,
		Msg:     snapMessage(&e.msg),
		LastSig: e.lastSig, ErrNote: e.errNote.raw(), ResErr: e.resultErr.raw(), Failed: e.failed, CLIStop: e.cliStop,
		Closed: e.closed, Seg: e.seg, Open: e.open, Session: e.sessionModel.bytes(),
		AgentSession: e.agentSession.bytes(),
		DeltasSeen:   e.deltas.seen, DeltasHidden: e.deltas.hidden,
		X: e.x, Agent: e.agent, Tick: e.tick, OtherOpen: e.otherOpen, Subagents: e.subagents,
		Would: e.would, Recorded: e.recorded,
		Parsed: e.parsed, Fit: e.fit, FormatNote: e.formatNote, FormatFits: e.formatFits,
		AutoLines: e.autoLines, AutoIgnored: e.autoIgnored, Msgs: e.msgs, CostNote: e.costNote,
	}
	for i := range e.agents {
		a := &e.agents[i]
		if !a.used {
			continue
		}
		s.Agents = append(s.Agents, agentSnapshot{Slot: i, Key: a.key, Tick: a.tick, Msg: snapMessage(&a.msg), Open: a.open,
			Streak: a.streak, Silent: a.silent, LastSig: a.lastSig, Nudged: a.nudged, ErrStreak: a.errStreak, X: a.x})
	}
	s.St.Guards = Guards{} // from Options
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Restore puts a Checkpoint's state into e, an engine built with the same
// Options that has not been fed yet.
func (e *Engine) Restore(data []byte) error {
	var s snapshot
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	switch {
	case s.Version != checkpointVersion:
		return fmt.Errorf("checkpoint: version %d, want %d", s.Version, checkpointVersion)
	case s.Format != e.format:
		return fmt.Errorf("checkpoint: format %q, the engine reads %q", s.Format, e.format)
	case len(s.Ring) != maxCalls || s.N > maxCalls || s.Next >= maxCalls || s.Next < 0:
		return fmt.Errorf("checkpoint: call set of %d", len(s.Ring))
	case s.Agent < 0 || s.Agent >= maxAgents:
		return fmt.Errorf("checkpoint: agent %d", s.Agent)
	case e.lines != 0:
		return fmt.Errorf("checkpoint: the engine was fed already")
	}
	guards, capUSD, prior := e.st.Guards, e.st.Cap, e.st.Prior
	e.st = s.St
	e.st.Guards, e.st.Cap, e.st.Prior = guards, capUSD, prior
	if s.Active != "" {
		e.setFormat(s.Active)
	}
	e.calls.flags = s.Flags
	if e.calls.flags == nil {
		e.calls.flags = make(map[uint64]callInfo)
	}
	copy(e.calls.ring[:], s.Ring)
	e.calls.next, e.calls.n = s.Next, s.N
	e.lines, e.unparsed, e.live, e.result, e.stopped, e.finished = s.Lines, s.Unparsed, s.Live, s.Result, s.Stopped, s.Finished
	e.ignored = s.Ignored
	e.stopLine, e.lastTime, e.trips, e.nudges, e.anon = s.StopLine, s.LastTime, s.Trips, s.Nudges, s.Anon
	e.msg = s.Msg.message()
	e.x, e.agent, e.tick, e.otherOpen, e.subagents = s.X, s.Agent, s.Tick, s.OtherOpen, s.Subagents
	e.would, e.recorded = s.Would, s.Recorded&e.audit
	for _, w := range e.would {
		e.wouldCount += w.Count
	}
	for _, a := range s.Agents {
		if a.Slot < 0 || a.Slot >= maxAgents {
			return fmt.Errorf("checkpoint: agent slot %d", a.Slot)
		}
		e.agents[a.Slot] = agentSlot{key: a.Key, used: true, tick: a.Tick, msg: a.Msg.message(), open: a.Open,
			streak: a.Streak, silent: a.Silent, lastSig: a.LastSig, nudged: a.Nudged, errStreak: a.ErrStreak, x: a.X}
	}
	e.lastSig = s.LastSig
	e.errNote.set(s.ErrNote)
	e.resultErr.set(s.ResErr)
	e.failed, e.cliStop = s.Failed, s.CLIStop
	e.closed, e.seg, e.open = s.Closed, s.Seg, s.Open
	e.sessionModel.set(s.Session)
	e.agentSession.set(s.AgentSession)
	e.deltas = deltaSight{seen: s.DeltasSeen, hidden: s.DeltasHidden}
	e.parsed, e.fit, e.formatNote, e.formatFits = s.Parsed, s.Fit, s.FormatNote, s.FormatFits
	e.autoLines, e.autoIgnored, e.msgs, e.costNote = s.AutoLines, s.AutoIgnored, s.Msgs, s.CostNote
	if e.parsed == 0 && e.lines > e.unparsed { // an older checkpoint: its blank lines count as read
		e.parsed = e.lines - e.unparsed
	}
	e.priceCache.ok = false
	return nil
}
