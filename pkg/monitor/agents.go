package monitor

// Subagents (docs/design.md#subagents): claude lines with parent_tool_use_id
// come from a subagent. Steps and cost count every agent's calls; the
// identical-call streak, cycles, repeated errors, the silent run and the
// model message are judged per agent. The engine works on the current
// agent's fields in place (the fold reads them as before) and parks the
// others in a fixed table: switching agents copies one slot, and memory
// stays flat however many subagents a turn starts.

// maxAgents bounds the agents judged at once: the main agent and up to
// seven subagents working side by side. A further one takes the place of
// the one seen least recently (its open message is paid and forgotten).
const maxAgents = 8

// answerMemory is how many recent signatures keep their last answer for
// answerAware: a cycle has at most maxCycle of them.
const answerMemory = 8

// patternState is the per-agent state that only the pattern detectors
// (cycles, repeated errors, answerAware) read. Fields are exported for the
// checkpoint.
type patternState struct {
	Cyc     cycleTrack
	LastErr uint64 // hash of the error text of the current streak
	Seq     int64  // calls compared (their arguments complete)
	Answers [answerMemory]answerSeen
	NextAns int
}

// answerSeen is the last successful answer (hash) to a call signature.
type answerSeen struct {
	Sig, Ans uint64
}

// agentSlots are the agents' slots, the current one's unused while it is
// current (its fields are the fold's own).
type agentSlots [maxAgents]agentSlot

// agentSlot parks an agent that is not the current one.
type agentSlot struct {
	Key      uint64 // hash of the parent tool id; 0 is the main agent
	Used     bool
	Tick     uint64 // last switch to it, for eviction
	Msg      message
	Open     Money
	LastSig  uint64
	Counters AgentCounters
	X        patternState
}

// agentKey is the slot key of a line's agent.
func agentKey(parent []byte) uint64 {
	if len(parent) == 0 {
		return 0
	}
	return idHash(parent) | 1
}

// switchAgent makes the agent that wrote the current line the current one.
func (e *Engine) switchAgent(parent []byte) {
	key := agentKey(parent)
	if key == e.f.Agents[e.f.Agent].Key {
		return
	}
	e.park()
	idx := e.slotOf(key)
	e.unpark(idx)
}

// slotOf finds the slot of key, or frees one for it.
func (e *Engine) slotOf(key uint64) int {
	if key == 0 {
		return 0
	}
	free, oldest := -1, -1
	for i := 1; i < maxAgents; i++ {
		s := &e.f.Agents[i]
		switch {
		case s.Used && s.Key == key:
			return i
		case !s.Used && free < 0:
			free = i
		case s.Used && (oldest < 0 || s.Tick < e.f.Agents[oldest].Tick):
			oldest = i
		}
	}
	if free < 0 {
		free = oldest
		e.f.Seg = e.f.Seg.Add(e.f.Agents[free].Open) // its open message is paid, not judged
	}
	e.f.Agents[free] = agentSlot{Key: key, Used: true}
	e.f.Subagents = true
	return free
}

// park saves the current agent's fields into its slot.
func (e *Engine) park() {
	s := &e.f.Agents[e.f.Agent]
	s.Used = true
	s.Msg, s.Open, s.LastSig, s.X, s.Counters = e.f.Msg, e.f.Open, e.f.LastSig, e.f.X, e.st.AgentCounters
}

// unpark makes slot idx the current agent.
func (e *Engine) unpark(idx int) {
	s := &e.f.Agents[idx]
	e.f.Agent = idx
	e.f.Tick++
	s.Tick = e.f.Tick
	e.f.Msg, e.f.Open, e.f.LastSig, e.f.X, e.st.AgentCounters = s.Msg, s.Open, s.LastSig, s.X, s.Counters
	e.st.Cycle, e.st.CyclePeriod = e.f.X.Cyc.best()
	e.f.OtherOpen = 0
	for i := range e.f.Agents {
		if i != idx && e.f.Agents[i].Used {
			e.f.OtherOpen = e.f.OtherOpen.Add(e.f.Agents[i].Open)
		}
	}
}

// dropSubagents ends every subagent at a turn or session boundary: their
// open messages are paid, not judged, and the main agent is current.
func (e *Engine) dropSubagents() {
	if !e.f.Subagents {
		return
	}
	if e.f.Agent != 0 {
		e.park()
		e.unpark(0)
	}
	for i := 1; i < maxAgents; i++ {
		if e.f.Agents[i].Used {
			e.f.Seg = e.f.Seg.Add(e.f.Agents[i].Open)
		}
		e.f.Agents[i] = agentSlot{}
	}
	e.f.OtherOpen, e.f.Subagents = 0, false
}
