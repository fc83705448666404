package gateway

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// The meter reads each model answer as it passes, holding at most one
// server-sent event (maxEvent) or, for an answer sent whole, the answer
// itself up to maxWhole: the usage of a larger one is not read (counted
// Unmetered), the answer still passes.
const (
	maxEvent = 1 << 20
	maxWhole = 2 << 20
)

// meter wraps a model answer's body so that it is metered as it passes
// (ReverseProxy.ModifyResponse). An error status is one message end with
// StopError and no usage: the upstream billed nothing.
func (g *Gateway) meter(resp *http.Response) error {
	rt, _ := resp.Request.Context().Value(routeKey{}).(route)
	if !rt.model {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	a := newAnswer(rt.api.Name, ct == "text/event-stream", g.o.Deltas, g.o.Observe)
	if rt.scan != nil {
		a.side = func() bool { return !rt.scan.offersTools() }
	}
	if rt.api.Name == modelapi.NameGemini {
		a.model = modelapi.GeminiModel(resp.Request.URL.Path)
	}
	switch {
	case resp.StatusCode/100 != 2:
		a.stop = monitor.StopError
		a.final = true
		a.finish()
		return nil
	}
	resp.Body = &meteredBody{rc: resp.Body, a: a, unmetered: g.unmetered.Add}
	return nil
}

// meteredBody passes a model answer's bytes on and feeds them to its
// answer; the answer ends at EOF, a read error, or Close, whichever first.
type meteredBody struct {
	rc        io.ReadCloser
	a         *answer
	ended     bool
	unmetered func(int64) int64
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if !b.ended {
		b.a.write(p[:n])
		if err != nil {
			b.end()
		}
	}
	return n, err
}

func (b *meteredBody) Close() error {
	if !b.ended {
		b.end()
	}
	return b.rc.Close()
}

func (b *meteredBody) end() {
	b.ended = true
	if !b.a.finish() {
		b.unmetered(1)
	}
}

// reader reads one JSON object of an API's answer: a streamed event's
// data, or the whole answer, into a.
type reader func(a *answer, data []byte) error

// meterAPI is how the meter reads one API's answers.
type meterAPI struct {
	read reader
	// quiet are the streamed events that carry nothing the meter reads,
	// and deltas those that carry only deltas: not decoded (unless Deltas,
	// for deltas), most of a long stream. Each is a quoted event type: in
	// JSON it can only be a string token, never text inside one (whose
	// quotes are escaped).
	quiet, deltas []string
}

// meters holds each API's meterAPI, by modelapi name (a test checks every
// API of the table has one).
var meters = map[string]meterAPI{
	modelapi.NameAnthropic: {read: readAnthropic,
		quiet:  []string{`"content_block_start"`, `"content_block_stop"`, `"ping"`},
		deltas: []string{`"content_block_delta"`}},
	modelapi.NameResponses: {read: readResponses,
		quiet: []string{`"response.output_item.done"`, `"response.content_part.added"`,
			`"response.content_part.done"`, `"response.output_text.done"`, `"response.function_call_arguments.delta"`,
			`"response.function_call_arguments.done"`, `"response.reasoning_summary_part.added"`,
			`"response.reasoning_summary_part.done"`, `"response.reasoning_summary_text.done"`},
		deltas: []string{`"response.output_text.delta"`, `"response.reasoning_summary_text.delta"`, `"response.reasoning_text.delta"`}},
	// Every chunk may carry the finish reason or the usage.
	modelapi.NameChat:   {read: readChat},
	modelapi.NameGemini: {read: readGemini},
}

// newAnswer starts reading an answer of api (a server-sent event stream
// when sse, else one whole answer).
func newAnswer(api string, sse, deltas bool, observe func(monitor.ModelEvent)) *answer {
	m := meters[api]
	a := &answer{read: m.read, sse: sse, deltas: deltas, observe: observe}
	for _, q := range m.quiet {
		a.skip = append(a.skip, []byte(q))
	}
	if !deltas || observe == nil {
		for _, q := range m.deltas {
			a.skip = append(a.skip, []byte(q))
		}
	}
	return a
}

// answer is one model answer being read.
type answer struct {
	read reader
	// side says the request offered no tools (toolsScan): its events are
	// marked Side.
	side    func() bool
	skip    [][]byte // the events not decoded (meterAPI)
	observe func(monitor.ModelEvent)
	deltas  bool
	sse     bool

	// line holds a streamed line not yet ended, data the event's data so
	// far, whole a whole answer; over reports one of them overflowed.
	line, data, whole []byte
	over, lineOver    bool

	model string
	usage monitor.Usage
	stop  string
	// calls is set once the answer held a tool call (Gemini's finish
	// reason does not say, nor a response's status).
	calls bool
	// final is set when the answer's usage is read whole (its last event,
	// or the whole answer); bad counts what could not be read.
	final bool
	bad   int
}

// write feeds the next bytes of the answer.
func (a *answer) write(p []byte) {
	if !a.sse {
		if len(a.whole)+len(p) > maxWhole {
			a.over = true
			a.whole = nil
			return
		}
		if !a.over {
			a.whole = append(a.whole, p...)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			a.addLine(p)
			return
		}
		a.addLine(p[:i])
		a.endLine()
		p = p[i+1:]
	}
}

func (a *answer) addLine(p []byte) {
	if a.lineOver || len(a.line)+len(p) > maxEvent {
		a.lineOver, a.line = true, a.line[:0]
		return
	}
	a.line = append(a.line, p...)
}

// endLine handles one line of a server-sent event stream: data lines are
// gathered, a blank line ends the event (the other fields are not needed:
// every API names its events in their data too).
func (a *answer) endLine() {
	line := bytes.TrimSuffix(a.line, []byte{'\r'})
	over := a.lineOver
	a.line, a.lineOver = a.line[:0], false
	switch {
	case over:
		a.over = true
	case len(line) == 0:
		a.event()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[len("data:"):], []byte{' '})
		if len(a.data)+len(d)+1 > maxEvent {
			a.over = true
			return
		}
		if len(a.data) > 0 {
			a.data = append(a.data, '\n')
		}
		a.data = append(a.data, d...)
	}
}

// event reads the event gathered so far.
func (a *answer) event() {
	data, over := a.data, a.over
	a.data, a.over = a.data[:0], false
	switch {
	case over:
		a.bad++
	case len(data) == 0, string(data) == "[DONE]", a.skipped(data):
	default:
		a.apply(data)
	}
}

// skipped says whether an event is one the meter need not decode.
func (a *answer) skipped(data []byte) bool {
	for _, s := range a.skip {
		if bytes.Contains(data, s) {
			return true
		}
	}
	return false
}

// apply reads one JSON object (or, for Gemini, an array of them).
func (a *answer) apply(data []byte) {
	if a.read == nil {
		a.bad++
		return
	}
	if err := a.read(a, data); err != nil {
		a.bad++
	}
}

// finish ends the answer: one message end to Observe. It reports whether
// the answer was metered: its usage read whole.
func (a *answer) finish() bool {
	if a.sse && len(a.line) > 0 {
		a.endLine() // a last line with no newline
	}
	if a.sse && len(a.data) > 0 {
		a.event()
	}
	if !a.sse && !a.final {
		switch {
		case a.over:
			a.bad++
		case len(a.whole) > 0:
			a.apply(a.whole)
		}
		a.whole = nil
	}
	if a.observe != nil {
		a.observe(monitor.ModelEvent{End: true, Model: a.model, Usage: a.usage, Stop: a.stop, Side: a.isSide()})
	}
	return a.final
}

// isSide says whether the answer is a side request's.
func (a *answer) isSide() bool { return a.side != nil && a.side() }

// delta passes one text or thinking delta on, when asked for.
func (a *answer) delta(s string, thinking bool) {
	if a.deltas && s != "" && a.observe != nil {
		a.observe(monitor.ModelEvent{Delta: []byte(s), Thinking: thinking, Side: a.isSide()})
	}
}
