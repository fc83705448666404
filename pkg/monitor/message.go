package monitor

// The open model message: opened by an event, folded delta by delta or
// block by block, ended with its cost committed and its stop reason the
// turn's.

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
	// Rep follows repeated text per kind (text, thinking); Deltas marks a
	// message whose text streamed as deltas, so its whole blocks (a
	// restatement) are not read again; Whole marks one of the main agent
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
		e.st.StopReason, e.f.StopLine = e.streamStop(""), e.f.Lines
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
	if !e.whitespace(raw) && isText && e.f.Msg.Open {
		e.f.Msg.Speaks = true
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

// whitespace folds a non-empty delta (raw, escaped) into the whitespace
// run, and says whether it was whitespace only.
func (e *Engine) whitespace(raw []byte) bool {
	only, n := wsOnly(raw)
	if !only {
		e.st.WhitespaceDeltas, e.st.WhitespaceBytes = 0, 0
		return false
	}
	e.st.WhitespaceDeltas++
	if e.st.WhitespaceBytes < 1<<40 {
		e.st.WhitespaceBytes += n
	}
	return true
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
	if e.f.Msg.Deltas || e.f.ModelDeltas || len(raw) == 0 { // the model's deltas were read: its blocks restate them
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
