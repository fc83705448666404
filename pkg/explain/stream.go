// Package explain tells what happened in an agent's stream, for a person at a
// terminal or a tool (--output json): the stream as a timeline of numbered
// tool calls, error answers, steps and cost so far, the silent streak, time
// gaps, and the streak that tripped with the detector's message. It runs the
// detectors' own engine (pkg/monitor), so what it shows is what the sidecar
// judged. `turnwatch-sidecar explain FILE` and `kubectl turnwatch explain RUN`
// share it.
package explain

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Options configure Stream; they are the sidecar's (the turn's format,
// guards and prices), plus how long a silence must be to be shown.
type Options struct {
	Format       string
	Guards       monitor.Guards
	Prices       monitor.Prices
	PriorCostUSD string
	// Audit names the detectors whose trips only record, as the turn's
	// sidecar had them (its TURNWATCH_AUDIT).
	Audit []string
	// GapAtLeast is the shortest silence between two lines that the
	// timeline shows; 0 means DefaultGap.
	GapAtLeast time.Duration
	// ArgsWidth is how many characters of a call's arguments are shown; 0
	// means DefaultArgsWidth.
	ArgsWidth int
}

// Defaults of Options.
const (
	DefaultGap       = 30 * time.Second
	DefaultArgsWidth = 72
)

// Call is one tool call, numbered in the order the turn started them.
type Call struct {
	Step int    `json:"step"`
	Name string `json:"name"`
	Args string `json:"args"` // shortened
}

// Answer is a tool result the stream marked as an error (a refusal).
type Answer struct {
	Step int    `json:"step,omitempty"` // 0 when the call is unknown
	Name string `json:"name,omitempty"`
}

// Whitespace is a run of whitespace-only deltas, folded into one entry.
type Whitespace struct {
	FromLine int `json:"fromLine"`
	Deltas   int `json:"deltas"`
	Bytes    int `json:"bytes"`
}

// Entry is one moment of the timeline: a line (or a run of lines) that
// carried something worth showing, with the counters after it.
type Entry struct {
	Line int `json:"line"`
	// Time is the line's timestamp (RFC 3339) when the stream carries them.
	Time string `json:"time,omitempty"`
	// At is the time since the first timestamped line.
	AtSeconds float64 `json:"atSeconds,omitempty"`
	// GapSeconds is the silence before the line, when at least GapAtLeast.
	GapSeconds float64       `json:"gapSeconds,omitempty"`
	Calls      []Call        `json:"calls,omitempty"`
	Errors     []Answer      `json:"errors,omitempty"`
	Whitespace *Whitespace   `json:"whitespace,omitempty"`
	Result     bool          `json:"result,omitempty"` // the final result event
	ResultErr  string        `json:"resultError,omitempty"`
	Nudge      string        `json:"nudge,omitempty"`
	Trip       *monitor.Trip `json:"trip,omitempty"`
	// InTrip marks the entries of the streak that tripped.
	InTrip bool `json:"inTrip,omitempty"`
	// The counters after this entry.
	Steps   int    `json:"steps"`
	CostUSD string `json:"costUSD"`
	Silent  int    `json:"silent"` // tool-only messages since the agent last spoke
	Streak  int    `json:"streak"` // identical calls in a row
}

// Timeline is a stream explained: the engine's report and the entries.
type Timeline struct {
	Report  monitor.Report `json:"report"`
	Entries []Entry        `json:"timeline"`
}

// builder folds the lines into entries.
type builder struct {
	opts    Options
	eng     *monitor.Engine
	tl      Timeline
	steps   map[string]int // call id -> step
	shown   map[string]bool
	names   map[int]string // step -> tool name
	anon    int
	first   time.Time
	last    time.Time
	tripped bool
	// Where the streaks that can trip began: the entry index.
	streakFrom, wsFrom int
	ws                 *Whitespace
	// streakStarts: the entry being built starts a new identical-call streak.
	streakStarts bool
}

// Stream reads a stream (one event per line, with or without the kubectl
// --timestamps prefix) and explains it. It reads the lines as replay and the
// sidecar do (monitor.Loop): a line over monitor.DefaultMaxLine is one
// unparsed line, so the timeline's line numbers are theirs.
func Stream(r io.Reader, opts Options) (*Timeline, error) {
	eng, err := monitor.New(monitor.Options{Format: opts.Format, Guards: opts.Guards, Prices: opts.Prices, PriorCostUSD: opts.PriorCostUSD,
		Audit: opts.Audit})
	if err != nil {
		return nil, err
	}
	if opts.GapAtLeast <= 0 {
		opts.GapAtLeast = DefaultGap
	}
	if opts.ArgsWidth <= 0 {
		opts.ArgsWidth = DefaultArgsWidth
	}
	b := &builder{opts: opts, eng: eng, steps: map[string]int{}, shown: map[string]bool{}, names: map[int]string{},
		streakFrom: -1, wsFrom: -1}
	var before monitor.Report
	var prevState monitor.State
	loop := monitor.Loop{
		Before: func() { before, prevState = eng.Report(), eng.State() },
		After:  func(f monitor.Fed) { b.line(f, before, prevState) },
	}
	if err := loop.Run(eng, monitor.NewLineReader(r, monitor.DefaultMaxLine)); err != nil {
		return nil, err
	}
	b.finish()
	return &b.tl, nil
}

// line builds the entry of one line the loop fed: before and prevState
// are the engine's counters before it.
func (b *builder) line(f monitor.Fed, before monitor.Report, prevState monitor.State) {
	line, v := f.Line, f.Verdicts
	at, rest := monitor.LineTime(line)
	after := b.eng.Report()
	st := b.eng.State()
	n := after.Lines

	e := Entry{Line: n}
	if !at.IsZero() {
		if b.first.IsZero() {
			b.first = at
		}
		e.Time = at.Format(time.RFC3339Nano)
		e.AtSeconds = round(at.Sub(b.first).Seconds())
		if !b.last.IsZero() && at.Sub(b.last) >= b.opts.GapAtLeast {
			e.GapSeconds = round(at.Sub(b.last).Seconds())
		}
		b.last = at
	}
	// Inspect only a line the engine parsed: not blank, not unparsed, not
	// after a trip, and not a stall judged before the line was read.
	parsed := !b.tripped && len(bytes.TrimSpace(rest)) > 0 && after.Unparsed == before.Unparsed &&
		(v.Trip == nil || v.Trip.Line == n)
	if parsed {
		b.fold(&e, b.eng.Inspect(), st)
	}
	// A whitespace-only delta: fold it into the run's entry.
	if !b.tripped && st.WhitespaceDeltas > prevState.WhitespaceDeltas {
		if b.ws == nil {
			b.ws = &Whitespace{FromLine: n}
		}
		b.ws.Deltas, b.ws.Bytes = st.WhitespaceDeltas, st.WhitespaceBytes
	} else if st.WhitespaceDeltas == 0 {
		b.closeWhitespace()
	}
	if after.Result && !before.Result {
		e.Result, e.ResultErr = true, after.ResultError
	}
	for _, nu := range v.Nudges {
		e.Nudge = nu.Message
	}
	if v.Trip != nil {
		t := *v.Trip
		e.Trip = &t
	}
	b.add(e, st)
	if v.Trip != nil {
		b.markTrip(v.Trip)
		b.tripped = true
	}
}

// fold reads the line's calls and error answers.
func (b *builder) fold(e *Entry, info monitor.LineInfo, st monitor.State) {
	for _, c := range info.Calls {
		key := c.ID
		if key == "" {
			b.anon++
			key = fmt.Sprintf("\x00anon%d", b.anon)
		}
		step, ok := b.steps[key]
		if !ok {
			step = len(b.steps) + 1
			b.steps[key] = step
		}
		if c.Name != "" {
			b.names[step] = c.Name
		}
		// A call is shown once, when its arguments are complete (pi and
		// claude stream them in parts).
		if c.Complete && !b.shown[key] {
			b.shown[key] = true
			e.Calls = append(e.Calls, Call{Step: step, Name: b.names[step], Args: shorten(c.Args, b.opts.ArgsWidth)})
			if st.Streak <= 1 || b.streakFrom < 0 {
				b.streakStarts = true
			}
		}
	}
	for _, r := range info.Results {
		if !r.IsError {
			continue
		}
		a := Answer{Name: r.Name}
		if step, ok := b.steps[r.ID]; ok && r.ID != "" {
			a.Step = step
			if a.Name == "" {
				a.Name = b.names[step]
			}
		}
		e.Errors = append(e.Errors, a)
	}
}

// add appends an entry that carries something, with the counters after it.
func (b *builder) add(e Entry, st monitor.State) {
	if len(e.Calls) == 0 && len(e.Errors) == 0 && e.GapSeconds == 0 && !e.Result && e.Nudge == "" && e.Trip == nil {
		return
	}
	b.closeWhitespace()
	if b.streakStarts {
		b.streakFrom, b.streakStarts = len(b.tl.Entries), false
	}
	e.Steps, e.CostUSD, e.Silent, e.Streak = st.Steps, st.Cost.String(), st.Silent, st.Streak
	b.tl.Entries = append(b.tl.Entries, e)
}

// closeWhitespace turns a finished run of whitespace deltas into its entry.
func (b *builder) closeWhitespace() {
	if b.ws == nil {
		return
	}
	st := b.eng.State()
	ws := b.ws
	b.ws = nil
	b.wsFrom = len(b.tl.Entries)
	b.tl.Entries = append(b.tl.Entries, Entry{Line: ws.FromLine + ws.Deltas - 1, Whitespace: ws,
		Steps: st.Steps, CostUSD: st.Cost.String(), Silent: st.Silent, Streak: st.Streak})
}

// markTrip marks the streak that tripped: the identical calls, the run of
// whitespace, or the tripping entry alone.
func (b *builder) markTrip(t *monitor.Trip) {
	from := len(b.tl.Entries) - 1
	switch t.Detector {
	case monitor.DetectorIdenticalCalls:
		if b.streakFrom >= 0 {
			from = b.streakFrom
		}
	case monitor.DetectorDegeneration:
		if b.wsFrom >= 0 {
			from = b.wsFrom
		}
	}
	for i := max(from, 0); i < len(b.tl.Entries); i++ {
		if t.Detector == monitor.DetectorIdenticalCalls && len(b.tl.Entries[i].Calls) == 0 && b.tl.Entries[i].Trip == nil {
			continue
		}
		b.tl.Entries[i].InTrip = true
	}
}

func (b *builder) finish() {
	v := b.eng.Finish()
	b.closeWhitespace()
	if v.Trip != nil || len(v.Nudges) > 0 {
		e := Entry{Line: b.eng.Report().Lines}
		for _, nu := range v.Nudges {
			e.Nudge = nu.Message
		}
		if v.Trip != nil {
			t := *v.Trip
			e.Trip, e.Line = &t, t.Line
		}
		b.add(e, b.eng.State())
		if v.Trip != nil {
			b.markTrip(v.Trip)
		}
	}
	b.tl.Report = b.eng.Report()
}

func round(s float64) float64 { return float64(int64(s*1000+0.5)) / 1000 }

// shorten compacts a call's JSON arguments to one line of at most width
// characters.
func shorten(args string, width int) string {
	s := strings.Join(strings.Fields(args), " ")
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}
