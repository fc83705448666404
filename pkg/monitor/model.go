package monitor

import "time"

// The model's side of a turn (docs/gateway.md): what the sidecar's model
// gateway read from the provider's own answer, which the agent's stdout
// may hide or misstate. The gateway (pkg/gateway) makes these; the engine
// folds them beside the stdout lines (docs/design.md#the-models-side).

// Usage is one model message's token counts as the provider's answer gave
// them (Anthropic usage, OpenAI usage, Gemini usageMetadata), each kind
// counted once: Input excludes the cached tokens counted in CacheRead and
// CacheWrite.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead,omitempty"`
	CacheWrite int64 `json:"cacheWrite,omitempty"`
}

// ModelEvent is one thing the model streamed: a text or thinking delta, or
// the end of a model message with its model, usage and stop reason.
type ModelEvent struct {
	// Delta is a text delta, or a thinking delta when Thinking is set; nil
	// for a message end. It is the text as the model wrote it (decoded
	// from the API's JSON, not escaped).
	Delta    []byte
	Thinking bool
	// End marks the end of one model message (one answer to one request):
	// Model, Usage and Stop are set.
	End bool
	// Model is the model that answered, as the provider named it (else as
	// the request named it).
	Model string
	Usage Usage
	// Stop is the message's stop reason, normalized (StopEnd, StopToolUse,
	// StopLength, StopError; "" when the answer carried none).
	Stop string
	// Side marks an event of a side request: one that offered the model
	// no tools (a title, a CLI's own check such as Gemini CLI's next
	// speaker), the scripted model's rule too. It is paid (metered), but
	// its deltas and stop are not the agent's turn.
	Side bool
}

// FeedModel folds one model-side event beside the stdout lines (Feed): the
// sidecar calls both from one goroutine, in the order they arrive, so a
// message's model events come before the CLI prints it. It returns what the
// event produced, as Feed does; a trip names the last line fed before it.
//
// What it takes: every event moves the clock (the model is streaming, so
// the turn is not stalled); with Options.Metered, each End's usage priced
// is the turn's cost (metered); for a CLI whose stdout hides them
// (agents.CLI.ModelSide), the deltas feed degeneration and repetition, and
// the stop reasons are the turn's. Anything else the stdout shows already,
// and is not counted twice. After a stopping trip, and after the stream's
// final result, the metered cost still grows (what was paid was paid), and
// nothing is judged.
func (e *Engine) FeedModel(ev ModelEvent, now time.Time) Verdicts {
	e.cur = Verdicts{}
	if e.f.Finished {
		return e.cur
	}
	if !now.IsZero() && !e.f.Stopped && !e.judgeStall(now, e.f.Lines) {
		e.f.LastTime = now
	}
	switch {
	case ev.End:
		e.modelEnd(&ev)
	case e.side.Deltas && !ev.Side && e.judging():
		e.modelDelta(ev.Delta, !ev.Thinking)
	}
	return e.cur
}

// modelEnd ends a model message: its text runs end with it, its stop
// reason is the turn's where the stdout hides stops, and its usage priced
// is added to the metered cost (a side request's too: it was paid).
func (e *Engine) modelEnd(ev *ModelEvent) {
	if !ev.Side {
		e.f.ModelRep = [2]repeatTracker{}
	}
	if e.side.Stop && !ev.Side && e.judging() {
		e.f.ModelStop = ev.Stop
		e.st.StopReason, e.f.StopLine = ev.Stop, e.f.Lines
	}
	if !e.opts.Metered {
		return
	}
	e.f.Metered = e.f.Metered.Add(e.priceTokens([]byte(ev.Model), usageTokens(ev.Usage)))
	e.st.Cost = e.f.Metered
	if e.judging() {
		e.evaluate(atCost, e.f.Lines)
	}
}

// judging says whether the model's deltas, stops and cost are judged as
// the turn's: not after a stopping trip, nor after the stream's final
// result (a side request such as a title may come then).
func (e *Engine) judging() bool { return !e.f.Stopped && e.f.Live }

// usageTokens are the provider's counts in the price table's buckets; a
// negative count (no provider sends one) counts nothing.
func usageTokens(u Usage) tokens {
	return tokens{input: max(u.Input, 0), output: max(u.Output, 0),
		cacheRead: max(u.CacheRead, 0), cacheWrite: max(u.CacheWrite, 0)}
}

// modelDelta folds a delta the stdout hides into the whitespace run and
// the model message's repeated-text run, as a stdout delta is folded
// (delta): the same counters, so a CLI's stdout and its model never both
// count (only a CLI whose stdout hides its deltas takes the model's).
func (e *Engine) modelDelta(text []byte, isText bool) bool {
	e.f.Deltas.seen = true // the engine sees the model's deltas: none of them is blind
	e.f.ModelDeltas = true
	if len(text) == 0 {
		return false
	}
	e.esc = appendEscaped(e.esc[:0], text)
	raw := e.esc
	if cap(e.esc) > 1<<20 { // a rare long delta's copy does not stay for the rest of the stream
		e.esc = nil
	}
	e.whitespace(raw)
	kind := kindThinking
	if isText {
		kind = kindText
	}
	run, p := e.f.ModelRep[kind].feedDelta(raw, e.st.Guards.RepeatedTextBytes)
	e.st.RepeatBytes, e.st.RepeatPeriod = int(min(run, 1<<40)), p
	return e.evaluate(atDelta, e.f.Lines)
}

// appendEscaped appends text as JSON string contents (what the stdout
// parsers hand the detectors: raw, escaped): a quote, a backslash and the
// control characters are escaped, the rest is copied.
func appendEscaped(b, text []byte) []byte {
	const hex = "0123456789abcdef"
	for _, c := range text {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return b
}

// streamStop is the stop reason a stdout event sets: its own, unless it
// has none and the CLI hides its stops (agents.CLI.ModelSide): then the
// model's last.
func (e *Engine) streamStop(s string) string {
	if s == "" && e.side.Stop {
		return e.f.ModelStop
	}
	return s
}

// streamCost is the stream's own cost figure: the turn's cost unless it
// is metered.
// StreamCost is the cost the agent's stream reported so far, kept beside
// the metered cost (Report.StreamCostUSD, without building the report);
// 0 when the turn is not metered.
func (e *Engine) StreamCost() Money {
	if !e.opts.Metered {
		return 0
	}
	return e.f.Stream
}

func (e *Engine) streamCost() Money {
	if e.opts.Metered {
		return e.f.Stream
	}
	return e.st.Cost
}

// meteredRounding is how far the stream's figure may be from the metered
// one and still agree, besides a price table's difference (costsAgree): a
// millionth of a dollar, the rounding of a CLI that prints its float total.
const meteredRounding = Money(moneyUnit / 1_000_000)

// costsAgree says whether the stream's figure agrees with the metered one:
// within rounding, or within the factor costNoteBelow either way. Both
// price the same messages when both are honest, but a CLI prices them with
// its own table (Claude Code's totals came to 0.8 of turnwatch's pricing
// of the same messages), which is no disagreement; a stream far below is
// a forged or lost figure, one far above spent where the gateway did not
// see it (another route to a model).
func costsAgree(metered, stream Money) bool {
	if d := metered - stream; d <= meteredRounding && d >= -meteredRounding {
		return true
	}
	return stream >= metered/costNoteBelow && stream/costNoteBelow <= metered
}

// judgeMetered notes a metered turn whose stream's figure disagrees with
// the metered one (Report.CostMismatch), once the stream reported its
// final result: before it, the stream's figure lags the model's messages.
func (e *Engine) judgeMetered() {
	if !e.opts.Metered || !e.f.Result || costsAgree(e.f.Metered, e.f.Stream) {
		return
	}
	e.noteCost("the stream reported $" + e.f.Stream.String() + " where the model gateway metered $" +
		e.f.Metered.String() + ": the turn counts $" + e.f.Metered.String())
}
