package monitor

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
)

// checkpointVersion changes whenever the snapshot's shape does; a
// checkpoint of another version is refused (the caller replays instead).
const checkpointVersion = 4 // 3: the fold's state encoded whole (fold.go); 4: the model's side (model.go)

// checkpointRead is the oldest version Restore reads: a version 3
// checkpoint is a turn without the model's side, whose fields it lacks
// decode as zero (nothing metered, no model stop).
const checkpointRead = 3

// snapshot is everything the fold has folded: State and the fold's state
// (foldState) whole, without what New derives from Options (guards,
// prices, the spend cap, worldTools, the prior cost) and without per-line
// scratch. Its size is bounded: at most maxCalls call ids, two error texts,
// maxAgents agents, the trips and nudges of one turn.
type snapshot struct {
	Version int
	Format  string // Options.Format, checked on restore
	St      State
	Fold    foldState
}

// Checkpoint returns the engine's state, to be restored into an engine
// built with the same Options (Restore): the fold is deterministic, so the
// restored engine fed the lines after the checkpoint reaches the state an
// uninterrupted one would, even when the lines before it are gone (a
// rotated container log).
func (e *Engine) Checkpoint() ([]byte, error) {
	s := snapshot{Version: checkpointVersion, Format: e.format, St: e.st, Fold: e.f}
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
	if err := s.check(e); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	guards, capUSD, prior, budget, budgetName := e.st.Guards, e.st.Cap, e.st.Prior, e.st.Budget, e.st.BudgetName
	e.st, e.f = s.St, s.Fold
	e.st.Guards, e.st.Cap, e.st.Prior, e.st.Budget, e.st.BudgetName = guards, capUSD, prior, budget, budgetName
	if e.f.Active != "" {
		e.setFormat(e.f.Active)
	}
	if e.f.Calls.Flags == nil {
		e.f.Calls.init()
	}
	e.f.Recorded &= e.audit
	for _, w := range e.f.Would {
		e.wouldCount += w.Count
	}
	e.priceCache.ok = false
	return nil
}

// check says whether s can be restored into e.
func (s *snapshot) check(e *Engine) error {
	f := &s.Fold
	switch {
	case s.Version < checkpointRead || s.Version > checkpointVersion:
		return fmt.Errorf("version %d, want %d to %d", s.Version, checkpointRead, checkpointVersion)
	case s.Format != e.format:
		return fmt.Errorf("format %q, the engine reads %q", s.Format, e.format)
	case f.Calls.N > maxCalls || f.Calls.N < 0 || f.Calls.Next >= maxCalls || f.Calls.Next < 0:
		return fmt.Errorf("call set of %d", f.Calls.N)
	case f.Agent < 0 || f.Agent >= maxAgents:
		return fmt.Errorf("agent %d", f.Agent)
	case e.f.Lines != 0:
		return fmt.Errorf("the engine was fed already")
	}
	return nil
}

// The fold's leaf types that keep unexported fields, and those gob would
// send in full, encode themselves: the texts as their bytes (not their
// whole buffers), the agents in use only, the rest compactly.

// parked is an agent slot in use.
type parked struct {
	Slot  int
	Agent agentSlot
}

// MarshalBinary encodes the slots in use: gob sends an array whole, and an
// unused slot (a zero message with its text buffers) is 10 KB of zeros.
func (a agentSlots) MarshalBinary() ([]byte, error) {
	var used []parked
	for i := range a {
		if a[i].Used {
			used = append(used, parked{Slot: i, Agent: a[i]})
		}
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(used)
	return b.Bytes(), err
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (a *agentSlots) UnmarshalBinary(data []byte) error {
	var used []parked
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&used); err != nil {
		return err
	}
	*a = agentSlots{}
	for _, p := range used {
		if p.Slot < 0 || p.Slot >= maxAgents {
			return fmt.Errorf("agent slot %d", p.Slot)
		}
		a[p.Slot] = p.Agent
	}
	return nil
}

// MarshalBinary encodes the kept text.
func (t errText) MarshalBinary() ([]byte, error) { return t.raw(), nil }

// UnmarshalBinary decodes what MarshalBinary encoded.
func (t *errText) UnmarshalBinary(b []byte) error { t.set(b); return nil }

// MarshalBinary encodes the model's name.
func (m modelName) MarshalBinary() ([]byte, error) { return m.bytes(), nil }

// UnmarshalBinary decodes what MarshalBinary encoded.
func (m *modelName) UnmarshalBinary(b []byte) error { m.set(b); return nil }

// MarshalBinary encodes the session id.
func (a agentSessionID) MarshalBinary() ([]byte, error) { return a.bytes(), nil }

// UnmarshalBinary decodes what MarshalBinary encoded.
func (a *agentSessionID) UnmarshalBinary(b []byte) error { a.set(b); return nil }

// MarshalBinary encodes the token counts for the checkpoint.
func (t tokens) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 4*binary.MaxVarintLen64)
	for _, v := range [...]int64{t.input, t.output, t.cacheRead, t.cacheWrite} {
		b = binary.AppendVarint(b, v)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (t *tokens) UnmarshalBinary(b []byte) error {
	for _, v := range [...]*int64{&t.input, &t.output, &t.cacheRead, &t.cacheWrite} {
		x, n := binary.Varint(b)
		if n <= 0 {
			return fmt.Errorf("tokens: bad encoding")
		}
		*v, b = x, b[n:]
	}
	return nil
}

// MarshalBinary encodes what the stream showed of its deltas.
func (d deltaSight) MarshalBinary() ([]byte, error) {
	var b byte
	if d.seen {
		b |= 1
	}
	if d.hidden {
		b |= 2
	}
	return []byte{b}, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (d *deltaSight) UnmarshalBinary(b []byte) error {
	if len(b) != 1 || b[0] > 3 {
		return fmt.Errorf("deltaSight: bad encoding")
	}
	d.seen, d.hidden = b[0]&1 != 0, b[0]&2 != 0
	return nil
}
