package monitor

import "strconv"

// The turn's cost: reports folded per session and per message, judged
// against the cap (spend.go).

// spend folds a cost report and judges the cap. A report no model could
// produce is not counted (plausible.go); one that would lower what was
// counted already leaves it (notBelow).
func (e *Engine) spend() bool {
	ev := &e.ev
	if why := e.implausible(); why != "" {
		e.noteCost("line " + strconv.Itoa(e.f.Lines) + ": " + why + ": not counted")
		return false
	}
	switch ev.costKind {
	case costMessage:
		e.f.Open = e.notBelow(e.f.Open, ev.cost)
	case costAdd:
		e.f.Seg = e.f.Seg.Add(ev.cost)
	case costSegment:
		e.f.Seg, e.f.Open = e.notBelow(e.f.Seg.Add(e.f.Open), ev.cost), 0
	case costTokens:
		if len(ev.model) > 0 {
			e.f.Msg.Model.set(ev.model)
		}
		e.f.Msg.Toks.merge(ev.toks, ev.toksSet)
		e.f.Open = e.notBelow(e.f.Open, e.priceTokens(e.f.Msg.Model.bytes(), e.f.Msg.Toks))
	case costTokensTotal:
		e.f.Seg, e.f.Open = e.notBelow(e.f.Seg.Add(e.f.Open), e.priceTokens(nil, ev.toks)), 0
	}
	stream := e.f.Closed.Add(e.f.Seg).Add(e.f.Open).Add(e.f.OtherOpen)
	if e.opts.Metered { // the stream's word, kept beside the metered cost: it judges nothing
		e.f.Stream = stream
		return false
	}
	e.st.Cost = stream
	return e.evaluate(atCost, e.f.Lines)
}

// closeSegment ends a session of the stream (a new claude system/init, a
// new codex thread): its cost is kept, later reports start from zero.
func (e *Engine) closeSegment() {
	e.f.Closed = e.f.Closed.Add(e.f.Seg).Add(e.f.Open)
	e.f.Seg, e.f.Open = 0, 0
	e.f.Msg.Toks = tokens{}
}
