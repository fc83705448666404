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
	flags map[uint64]callInfo
	ring  [maxCalls]uint64
	next  int
	n     int
}

func (c *callSet) init() { c.flags = make(map[uint64]callInfo) } // grows with the calls seen, up to maxCalls

// get returns the flags of id, and whether it is new (then it is added).
func (c *callSet) get(id uint64) (f uint8, isNew bool, evicted uint8) {
	if f, ok := c.flags[id]; ok {
		return f.F, false, 0
	}
	if c.n == maxCalls {
		old := c.ring[c.next]
		evicted = c.flags[old].F
		delete(c.flags, old)
		c.n--
	}
	c.ring[c.next] = id
	c.next = (c.next + 1) % maxCalls
	c.n++
	c.flags[id] = callInfo{}
	return 0, true, evicted
}

func (c *callSet) set(id uint64, f uint8) {
	if ci, ok := c.flags[id]; ok {
		ci.F = f
		c.flags[id] = ci
	}
}

// setSig records a compared call's signature and place.
func (c *callSet) setSig(id, sig uint64, seq int64) {
	if ci, ok := c.flags[id]; ok {
		ci.Sig, ci.Seq = sig, seq
		c.flags[id] = ci
	}
}

func (c *callSet) lookup(id uint64) (callInfo, bool) {
	ci, ok := c.flags[id]
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
