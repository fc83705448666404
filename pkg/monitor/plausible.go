package monitor

import (
	"math"
	"strconv"
)

// Implausible costs (docs/design.md#implausible-costs). The agent's stdout
// is the agent's word: a cost or a token count in it may be anything. A
// report no model could produce is not counted: one message's usage beyond
// the price table's MaxMessageTokens, or one message's cost beyond what
// those tokens cost at the model's rates (ten times the table's highest
// rates for a model it does not price); a total of the session (claude's
// total_cost_usd, codex's and gemini's cumulative usage) beyond the
// ceiling of one message at the table's highest rates (the model's, when
// dearer) times the model messages and tool calls the turn showed, plus
// one. The report is dropped as an unreadable number is (readMoney): the
// line's other content counts, the cost stands where it was, and the turn
// notes it (CostMismatch).
//
// Nor does a report lower what was counted (notBelow).

// ceiling is the table's MaxMessageTokens; a table built without them
// (by hand, in a test) has the embedded table's.
func (p *Prices) ceiling() TokenCeiling {
	c := p.MaxMessageTokens
	if c.Input <= 0 || c.Output <= 0 {
		d := defaultPrices().MaxMessageTokens
		if c.Input <= 0 {
			c.Input = d.Input
		}
		if c.Output <= 0 {
			c.Output = d.Output
		}
	}
	return c
}

// messageCost is the most one model message priced at mp can cost: the
// input ceiling at the dearest of its input rates, the output ceiling at
// its output rate.
func (c TokenCeiling) messageCost(mp ModelPrice) Money {
	in := max(mp.Input, mp.CacheRead, mp.CacheWrite)
	return mulTokens(int64(c.Input), in).Add(mulTokens(int64(c.Output), mp.Output))
}

// holds says whether t is usage that n model messages could report.
func (c TokenCeiling) holds(t tokens, n int64) bool {
	in, out := satMul(int64(c.Input), n), satMul(int64(c.Output), n)
	if t.output > out || t.input > in || t.cacheRead > in || t.cacheWrite > in {
		return false
	}
	return t.input+t.cacheRead+t.cacheWrite <= in // each is at most in: no overflow
}

// satMul is a*b for non-negative a and b, saturating.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// reach is how many model messages a total of the session may cover:
// every message and tool call the turn showed, plus one for the message
// the report comes with.
func (e *Engine) reach() int64 {
	return 1 + e.f.Msgs + int64(e.st.Steps)
}

// implausible says why the event's cost report is no model's, or "" when
// it is plausible (or carries none).
func (e *Engine) implausible() string {
	ev := &e.ev
	c := e.prices.ceiling()
	switch ev.costKind {
	case costTokens: // one message's usage, as it stands with this report
		t := e.f.Msg.Toks
		t.merge(ev.toks, ev.toksSet)
		if !c.holds(t, 1) {
			return "token usage " + tokensText(t) + " is more than one model message takes in or writes"
		}
	case costTokensTotal: // the session's usage so far
		if n := e.reach(); !c.holds(ev.toks, n) {
			return "token usage " + tokensText(ev.toks) + " is more than " + strconv.FormatInt(n, 10) + " model messages take in or write"
		}
	case costMessage, costAdd: // one message's cost
		if most := e.messageCeiling(c); ev.cost > most {
			return "a cost of " + reported(ev.cost) + " is more than one model message can cost ($" + most.String() + ")"
		}
	case costSegment: // the session's cost
		n := e.reach()
		// A session's total covers its subagents' messages too, at their
		// own models: each message may be the table's dearest.
		if most := satMulMoney(max(e.messageCeiling(c), c.messageCost(e.prices.top)), n); ev.cost > most {
			return "a total cost of " + reported(ev.cost) + " is more than " + strconv.FormatInt(n, 10) +
				" model messages can cost ($" + most.String() + ")"
		}
	}
	return ""
}

// unpricedFactor is how much dearer than the table's dearest rates a
// model the table does not price may be: the dearest models sold cost
// about ten times what the dearest of the table does.
const unpricedFactor = 10

// messageCeiling is the most one model message of this line can cost: at
// the rates of the model the line, its message or its session names, when
// the table prices it; else at unpricedFactor times the table's highest.
func (e *Engine) messageCeiling(c TokenCeiling) Money {
	model := e.ev.model
	if len(model) == 0 && e.f.Msg.Open {
		model = e.f.Msg.Model.bytes()
	}
	if mp, ok := e.rates(model); ok {
		return c.messageCost(mp)
	}
	return satMulMoney(c.messageCost(e.prices.top), unpricedFactor)
}

// reported renders a reported cost; one past Money's range (1e300) reads
// as its saturated value "or more".
func reported(m Money) string {
	if m == Money(math.MaxInt64) {
		return "$" + m.String() + " or more"
	}
	return "$" + m.String()
}

// satMulMoney is m*n for non-negative m and n, saturating.
func satMulMoney(m Money, n int64) Money {
	return Money(satMul(int64(m), n))
}

func tokensText(t tokens) string {
	b := make([]byte, 0, 96)
	b = append(b, "input "...)
	b = strconv.AppendInt(b, t.input, 10)
	b = append(b, ", output "...)
	b = strconv.AppendInt(b, t.output, 10)
	b = append(b, ", cache read "...)
	b = strconv.AppendInt(b, t.cacheRead, 10)
	b = append(b, ", cache write "...)
	b = strconv.AppendInt(b, t.cacheWrite, 10)
	return string(b)
}

// costNoteBelow: a lower report is noted only when it is below 1/costNoteBelow
// of what was counted. A CLI's own price table may differ from turnwatch's
// (on the local node, Claude Code 2.1.328's final totals came to 0.8 of what
// turnwatch priced the same messages at), and every turn of it would be
// noted otherwise; the higher figure is kept either way.
const costNoteBelow = 2

// notBelow is a cost that stood at was after a report of reported: the
// report, unless it is lower (docs/design.md#a-cost-never-goes-down). Counts
// only grow within a turn, so a lower report is no correction (claude's
// final total_cost_usd of 0 after its messages were priced): was stands and
// the turn notes the difference.
func (e *Engine) notBelow(was, reported Money) Money {
	if reported >= was {
		return reported
	}
	if reported >= was/costNoteBelow {
		return was // a price table's difference, not a forgery: kept, not noted
	}
	keeps := "the turn keeps $"
	if e.opts.Metered { // the turn's cost is the metered one: this is the stream's figure
		keeps = "the stream's figure keeps $"
	}
	e.noteCost("line " + strconv.Itoa(e.f.Lines) + " reported $" + reported.String() + " where $" + was.String() +
		" was counted already: " + keeps + was.String())
	return was
}

// noteCost keeps the turn's first note on its cost (Report.CostMismatch).
func (e *Engine) noteCost(note string) {
	if e.f.CostNote == "" {
		e.f.CostNote = note
	}
}

// CostMismatch is the turn's first note on a cost report it did not take
// as it stood (Report.CostMismatch); "" when it took them all.
func (e *Engine) CostMismatch() string { return e.f.CostNote }
