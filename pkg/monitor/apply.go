package monitor

// Applying one event to the fold, in the order within one event
// (docs/design.md#order-within-one-event).

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
		e.st.StopReason, e.f.StopLine = e.streamStop(ev.turnStop), e.f.Lines
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
