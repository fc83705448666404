package monitor

import "bytes"

// maxCalls bounds how many call ids the engine remembers. Restatements of a
// call arrive close to it (the same message, its turn_end), so remembering
// the most recent ones is enough to count each call once while keeping
// memory flat however long the stream runs.
const maxCalls = 4096

// call flags.
const (
	callCompared    = 1 << iota // arguments complete, identity compared
	callOutstanding             // arguments complete, no result yet
	callWorld                   // a worldTools tool
	callAnswered                // result seen
)

// callInfo is what the engine remembers of a call: its flags, and once its
// arguments are complete, its signature and its place among the agent's
// compared calls (answerAware restarts counts there). Fields are exported
// for the checkpoint.
type callInfo struct {
	F   uint8
	Sig uint64
	Seq int64
}

// callSet remembers call ids (by 64-bit hash) with their flags, evicting
// the oldest when full.
type callSet struct {
	Flags map[uint64]callInfo
	Ring  [maxCalls]uint64
	Next  int
	N     int
}

func (c *callSet) init() { c.Flags = make(map[uint64]callInfo) } // grows with the calls seen, up to maxCalls

// get returns the flags of id, and whether it is new (then it is added).
func (c *callSet) get(id uint64) (f uint8, isNew bool, evicted uint8) {
	if f, ok := c.Flags[id]; ok {
		return f.F, false, 0
	}
	if c.N == maxCalls {
		old := c.Ring[c.Next]
		evicted = c.Flags[old].F
		delete(c.Flags, old)
		c.N--
	}
	c.Ring[c.Next] = id
	c.Next = (c.Next + 1) % maxCalls
	c.N++
	c.Flags[id] = callInfo{}
	return 0, true, evicted
}

func (c *callSet) set(id uint64, f uint8) {
	if ci, ok := c.Flags[id]; ok {
		ci.F = f
		c.Flags[id] = ci
	}
}

// setSig records a compared call's signature and place.
func (c *callSet) setSig(id, sig uint64, seq int64) {
	if ci, ok := c.Flags[id]; ok {
		ci.Sig, ci.Seq = sig, seq
		c.Flags[id] = ci
	}
}

func (c *callSet) lookup(id uint64) (callInfo, bool) {
	ci, ok := c.Flags[id]
	return ci, ok
}

// idHash hashes a raw id by its decoded text, so any spelling of an id
// names the same call or message.
func idHash(id []byte) uint64 {
	if bytes.IndexByte(id, '\\') < 0 {
		return mix64(hashBytes(fnvOffset, id))
	}
	return mix64(fnvUnescaped(id))
}
