package monitor

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"time"
)

// checkpointVersion changes whenever the snapshot's shape does; a
// checkpoint of another version is refused (the caller replays instead).
const checkpointVersion = 1

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
	Flags    map[uint64]uint8
	Ring     []uint64
	Next, N  int
	Lines    int
	Unparsed int
	Ignored  int // added after version 1 was written: an older checkpoint restores it as 0
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
	Closed   Money
	Seg      Money
	Open     Money
	Session  []byte
}

type msgSnapshot struct {
	Open, Speaks, HasStop  bool
	ID                     uint64
	Calls, StopLine        int
	Stop                   string
	In, Out, CRead, CWrite int64
	Model                  []byte
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
		Msg: msgSnapshot{Open: e.msg.open, Speaks: e.msg.speaks, HasStop: e.msg.hasStop, ID: e.msg.id, Calls: e.msg.calls,
			StopLine: e.msg.stopLine, Stop: e.msg.stop, In: e.msg.toks.input, Out: e.msg.toks.output,
			CRead: e.msg.toks.cacheRead, CWrite: e.msg.toks.cacheWrite, Model: e.msg.model.bytes()},
		LastSig: e.lastSig, ErrNote: e.errNote.raw(), ResErr: e.resultErr.raw(), Failed: e.failed,
		Closed: e.closed, Seg: e.seg, Open: e.open, Session: e.sessionModel.bytes(),
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
		e.calls.flags = make(map[uint64]uint8)
	}
	copy(e.calls.ring[:], s.Ring)
	e.calls.next, e.calls.n = s.Next, s.N
	e.lines, e.unparsed, e.live, e.result, e.stopped, e.finished = s.Lines, s.Unparsed, s.Live, s.Result, s.Stopped, s.Finished
	e.ignored = s.Ignored
	e.stopLine, e.lastTime, e.trips, e.nudges, e.anon = s.StopLine, s.LastTime, s.Trips, s.Nudges, s.Anon
	e.msg = message{open: s.Msg.Open, speaks: s.Msg.Speaks, hasStop: s.Msg.HasStop, id: s.Msg.ID, calls: s.Msg.Calls,
		stopLine: s.Msg.StopLine, stop: s.Msg.Stop,
		toks: tokens{input: s.Msg.In, output: s.Msg.Out, cacheRead: s.Msg.CRead, cacheWrite: s.Msg.CWrite}}
	e.msg.model.set(s.Msg.Model)
	e.lastSig = s.LastSig
	e.errNote.set(s.ErrNote)
	e.resultErr.set(s.ResErr)
	e.failed = s.Failed
	e.closed, e.seg, e.open = s.Closed, s.Seg, s.Open
	e.sessionModel.set(s.Session)
	e.priceCache.ok = false
	return nil
}
