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

// agentSlot parks an agent that is not the current one.
type agentSlot struct {
	key       uint64 // hash of the parent tool id; 0 is the main agent
	used      bool
	tick      uint64 // last switch to it, for eviction
	msg       message
	open      Money
	streak    int
	lastSig   uint64
	silent    int
	nudged    bool
	errStreak int
	x         patternState
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
	if key == e.agents[e.agent].key {
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
		s := &e.agents[i]
		switch {
		case s.used && s.key == key:
			return i
		case !s.used && free < 0:
			free = i
		case s.used && (oldest < 0 || s.tick < e.agents[oldest].tick):
			oldest = i
		}
	}
	if free < 0 {
		free = oldest
		e.seg = e.seg.Add(e.agents[free].open) // its open message is paid, not judged
	}
	e.agents[free] = agentSlot{key: key, used: true}
	e.subagents = true
	return free
}

// park saves the current agent's fields into its slot.
func (e *Engine) park() {
	s := &e.agents[e.agent]
	s.used = true
	s.msg, s.open, s.streak, s.lastSig = e.msg, e.open, e.st.Streak, e.lastSig
	s.silent, s.nudged, s.errStreak, s.x = e.st.Silent, e.st.Nudged, e.st.ErrorStreak, e.x
}

// unpark makes slot idx the current agent.
func (e *Engine) unpark(idx int) {
	s := &e.agents[idx]
	e.agent = idx
	e.tick++
	s.tick = e.tick
	e.msg, e.open, e.st.Streak, e.lastSig = s.msg, s.open, s.streak, s.lastSig
	e.st.Silent, e.st.Nudged, e.st.ErrorStreak, e.x = s.silent, s.nudged, s.errStreak, s.x
	e.st.Cycle, e.st.CyclePeriod = e.x.Cyc.best()
	e.otherOpen = 0
	for i := range e.agents {
		if i != idx && e.agents[i].used {
			e.otherOpen = e.otherOpen.Add(e.agents[i].open)
		}
	}
}

// dropSubagents ends every subagent at a turn or session boundary: their
// open messages are paid, not judged, and the main agent is current.
func (e *Engine) dropSubagents() {
	if !e.subagents {
		return
	}
	if e.agent != 0 {
		e.park()
		e.unpark(0)
	}
	for i := 1; i < maxAgents; i++ {
		if e.agents[i].used {
			e.seg = e.seg.Add(e.agents[i].open)
		}
		e.agents[i] = agentSlot{}
	}
	e.otherOpen, e.subagents = 0, false
}
