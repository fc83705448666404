package main

import (
	"fmt"
	"strings"
	"time"
)

// A Script is one scenario told once, without any format: the model messages
// of one agent turn with their timing. Each format's renderer turns it into
// that CLI's event stream, so the five streams of a scenario tell the same story.
type Script struct {
	// Name is the scenario name: the scripted model's name for the same
	// story (scriptedmodel.Scenarios), or one of fakeOnly.
	Name string
	// Prompt is what the user asked.
	Prompt string
	// Msgs are the model messages, in order.
	Msgs []Msg
	// Result is true when the stream ends with the format's final result event.
	Result bool
}

// Msg is one model message (one LLM call).
type Msg struct {
	// Wait is the time from the previous event to this message's first event.
	Wait time.Duration
	// Thinking and Text are the streamed deltas, in order.
	Thinking []string
	Text     []string
	// Every is the time between two deltas.
	Every time.Duration
	// PauseAfter deltas (thinking, then text, counted together), the model
	// goes quiet for Pause while it is still generating: a stall.
	PauseAfter int
	Pause      time.Duration
	// Calls are the tool calls the message makes, each answered after Took.
	Calls []Call
	// Stop is the normalized stop reason: end, tool_use or length.
	Stop string
	// In and Out are the message's input and output tokens.
	In, Out int
	// CostUSD is what the message cost, a decimal string.
	CostUSD string
}

// Call is one tool call, described without any format's vocabulary.
type Call struct {
	Kind    CallKind
	Path    string // read, edit, write
	Command string // shell
	Pattern string // grep
	Old     string // edit
	New     string // edit, write (content)
	Output  string
	Failed  bool
	Took    time.Duration
}

// CallKind is what a tool call does; renderers name the tool per format.
type CallKind int

// The kinds of tool calls the scenarios make.
const (
	Shell CallKind = iota
	Read
	Grep
	Edit
	Write
)

func (m Msg) text() string     { return strings.Join(m.Text, "") }
func (m Msg) thinking() string { return strings.Join(m.Thinking, "") }

// speaks reports whether the message carries non-whitespace text.
func (m Msg) speaks() bool { return strings.TrimSpace(m.text()) != "" }

const sec = time.Second

func words(s string) []string {
	// Split into delta-sized chunks of about three words, keeping spaces.
	var out []string
	f := strings.SplitAfter(s, " ")
	for i := 0; i < len(f); i += 3 {
		out = append(out, strings.Join(f[i:min(i+3, len(f))], ""))
	}
	return out
}

// fakeOnly are the scenarios the scripted model does not play: a CLI that
// exits in the middle of its turn, without its final result, is the
// agent's doing, not the model's.
var fakeOnly = []string{"noresult"}

// Scripts returns every scenario, in a fixed order.
func Scripts() []Script {
	return []Script{healthy(), identicalLoop(), stall(), whitespace(), silentRun(), overspend(), lengthStop(), noresult(),
		cycle(), repeatedErrors(), repetition()}
}

// scriptNames are the scenarios' names, in Scripts' order.
func scriptNames() []string {
	var out []string
	for _, s := range Scripts() {
		out = append(out, s.Name)
	}
	return out
}

func healthy() Script {
	return Script{
		Name:   "healthy",
		Prompt: "The pager test fails. Fix it.",
		Result: true,
		Msgs: []Msg{
			{Wait: 1200 * time.Millisecond, Every: 80 * time.Millisecond,
				Thinking: words("The last page is missing, so the page count is probably rounded down."),
				Text:     words("I'll read the pager first."),
				Calls:    []Call{{Kind: Read, Path: "pkg/pager/pager.go", Output: "package pager\n\nfunc Pages(n, size int) int { return n / size }\n", Took: 100 * time.Millisecond}},
				Stop:     "tool_use", In: 2100, Out: 90, CostUSD: "0.0077"},
			{Wait: 1500 * time.Millisecond, Every: 80 * time.Millisecond,
				Text:  words("Running the test to see the failure."),
				Calls: []Call{{Kind: Shell, Command: "go test ./pkg/pager/", Output: "--- FAIL: TestLastPage (0.00s)\n    pager_test.go:31: got 4 pages, want 5\nFAIL\n", Failed: true, Took: 2500 * time.Millisecond}},
				Stop:  "tool_use", In: 2400, Out: 60, CostUSD: "0.0081"},
			{Wait: 2 * sec, Every: 80 * time.Millisecond,
				Thinking: words("Pages must round up: (n + size - 1) / size."),
				Calls:    []Call{{Kind: Edit, Path: "pkg/pager/pager.go", Old: "return n / size", New: "return (n + size - 1) / size", Output: "ok", Took: 100 * time.Millisecond}},
				Stop:     "tool_use", In: 2600, Out: 110, CostUSD: "0.0095"},
			{Wait: 1200 * time.Millisecond,
				Calls: []Call{{Kind: Shell, Command: "go test ./pkg/pager/", Output: "ok  \tdemo/pkg/pager\t0.012s\n", Took: 2 * sec}},
				Stop:  "tool_use", In: 2700, Out: 40, CostUSD: "0.0087"},
			{Wait: 1500 * time.Millisecond, Every: 80 * time.Millisecond,
				Text: words("Fixed: Pages rounded the page count down, so the last partial page was lost. It now rounds up, and go test ./pkg/pager/ passes."),
				Stop: "end", In: 2800, Out: 70, CostUSD: "0.0095"},
		},
	}
}

// identicalLoop is the reviewer of docs/design.md#the-reviewer-that-never-stopped:
// the same grep, byte for byte, ~100 times.
func identicalLoop() Script {
	grep := Call{Kind: Grep, Pattern: "func Reconcile", Path: ".", Output: "", Took: 100 * time.Millisecond}
	msgs := []Msg{{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text:  words("Let me find where Reconcile is defined."),
		Calls: []Call{grep}, Stop: "tool_use", In: 1800, Out: 40, CostUSD: "0.0060"}}
	for i := 1; i < 100; i++ {
		msgs = append(msgs, Msg{Wait: 800 * time.Millisecond, Calls: []Call{grep}, Stop: "tool_use",
			In: 1800 + 60*i, Out: 30, CostUSD: "0.0060"})
	}
	msgs = append(msgs, Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text: words("I could not find func Reconcile in this repository."),
		Stop: "end", In: 8000, Out: 20, CostUSD: "0.0243"})
	return Script{Name: "identicalLoop", Prompt: "Review the diff for the Reconcile change.", Result: true, Msgs: msgs}
}

// stall is the idle turn of docs/design.md#the-turn-that-was-alive-but-useless:
// the model goes quiet for 20 minutes
// in the middle of a message, then finishes as if nothing happened.
func stall() Script {
	return Script{
		Name:   "stall",
		Prompt: "Why does the nightly job fail?",
		Result: true,
		Msgs: []Msg{
			{Wait: 1 * sec, Every: 80 * time.Millisecond,
				Text:  words("Looking at the failing job."),
				Calls: []Call{{Kind: Shell, Command: "cat logs/nightly.log", Output: "error: disk quota exceeded\n", Took: 200 * time.Millisecond}},
				Stop:  "tool_use", In: 1500, Out: 40, CostUSD: "0.0053"},
			{Wait: 1 * sec, Every: 100 * time.Millisecond,
				Thinking:   words("The job writes its artifacts to a volume that is full, so"),
				PauseAfter: 3, Pause: 20 * time.Minute,
				Text: words("The nightly job fails because its volume is full: disk quota exceeded."),
				Stop: "end", In: 1700, Out: 80, CostUSD: "0.0063"},
		},
	}
}

// whitespace is the spiral of docs/design.md#the-turn-that-was-alive-but-useless:
// reasoning deltas of nothing but
// whitespace until the output-length cap.
func whitespace() Script {
	ws := []string{"\n", " ", "\n\n", "  ", "\t", " \n", "   ", "\n \n"}
	th := []string{"Considering the schema change"}
	for i := 0; i < 300; i++ {
		th = append(th, ws[i%len(ws)])
	}
	return Script{
		Name:   "whitespace",
		Prompt: "Write the migration for the orders table.",
		Result: true,
		Msgs: []Msg{
			{Wait: 1 * sec, Every: 80 * time.Millisecond,
				Text:  words("Let me look at the current schema."),
				Calls: []Call{{Kind: Read, Path: "db/schema.sql", Output: "CREATE TABLE orders (id bigint primary key);\n", Took: 100 * time.Millisecond}},
				Stop:  "tool_use", In: 1600, Out: 40, CostUSD: "0.0054"},
			{Wait: 1 * sec, Every: 25 * time.Millisecond, Thinking: th,
				Stop: "length", In: 1800, Out: 32000, CostUSD: "0.4854"},
		},
	}
}

// silentRun is the run of docs/design.md#the-agent-that-never-reported: 16
// tool-only messages, each different,
// then it speaks and finishes.
func silentRun() Script {
	msgs := []Msg{{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text:  words("I'll move the storage layer to the new interface."),
		Calls: []Call{{Kind: Read, Path: "storage/store.go", Output: "package storage\n", Took: 100 * time.Millisecond}},
		Stop:  "tool_use", In: 2000, Out: 50, CostUSD: "0.0068"}}
	files := []string{"storage/mem.go", "storage/disk.go", "storage/cache.go", "storage/index.go"}
	for i := 0; i < 16; i++ {
		f := files[i%len(files)]
		var c Call
		switch i % 4 {
		case 0:
			c = Call{Kind: Read, Path: f, Output: "package storage\n"}
		case 1:
			c = Call{Kind: Edit, Path: f, Old: fmt.Sprintf("Get%d(", i), New: fmt.Sprintf("Load%d(ctx, ", i), Output: "ok"}
		case 2:
			c = Call{Kind: Shell, Command: fmt.Sprintf("go build ./storage/... # pass %d", i), Output: ""}
		default:
			c = Call{Kind: Grep, Pattern: fmt.Sprintf("Get%d\\(", i-2), Path: "storage", Output: f + ":12"}
		}
		c.Took = 200 * time.Millisecond
		msgs = append(msgs, Msg{Wait: 1 * sec, Calls: []Call{c}, Stop: "tool_use", In: 2100 + 100*i, Out: 60, CostUSD: "0.0075"})
	}
	msgs = append(msgs,
		Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
			Text:  words("Progress: every storage backend now takes a context; running the tests."),
			Calls: []Call{{Kind: Shell, Command: "go test ./storage/...", Output: "ok  \tdemo/storage\t0.210s\n", Took: 1500 * time.Millisecond}},
			Stop:  "tool_use", In: 4000, Out: 60, CostUSD: "0.0129"},
		Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
			Text: words("Done: the storage layer uses the new interface and its tests pass."),
			Stop: "end", In: 4200, Out: 40, CostUSD: "0.0132"})
	return Script{Name: "silentRun", Prompt: "Move the storage layer to the context-aware interface.", Result: true, Msgs: msgs}
}

// overspend climbs about 0.36 USD per message, ten messages: 3.6 USD.
func overspend() Script {
	var msgs []Msg
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Msg{Wait: 1500 * time.Millisecond, Every: 80 * time.Millisecond,
			Text:  words(fmt.Sprintf("Rewriting chapter %d of the handbook.", i+1)),
			Calls: []Call{{Kind: Write, Path: fmt.Sprintf("handbook/ch%02d.md", i+1), New: strings.Repeat("Lorem ipsum. ", 20), Output: "ok", Took: 100 * time.Millisecond}},
			Stop:  "tool_use", In: 100000, Out: 4000, CostUSD: "0.3600"})
	}
	msgs = append(msgs, Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text: words("The handbook is rewritten."), Stop: "end", In: 100000, Out: 200, CostUSD: "0.3030"})
	return Script{Name: "overspend", Prompt: "Rewrite the handbook.", Result: true, Msgs: msgs}
}

// lengthStop ends on the output-length stop reason after a long answer.
func lengthStop() Script {
	return Script{
		Name:   "lengthStop",
		Prompt: "Write the full incident report.",
		Result: true,
		Msgs: []Msg{
			{Wait: 1 * sec, Every: 80 * time.Millisecond,
				Text:  words("Reading the timeline first."),
				Calls: []Call{{Kind: Read, Path: "incident/timeline.md", Output: "09:00 deploy\n09:05 alerts\n", Took: 100 * time.Millisecond}},
				Stop:  "tool_use", In: 1500, Out: 30, CostUSD: "0.0050"},
			{Wait: 1 * sec, Every: 60 * time.Millisecond,
				Text: words(strings.Repeat("At 09:00 the deploy began and the alerts followed within minutes. ", 6)),
				Stop: "length", In: 1600, Out: 32000, CostUSD: "0.4848"},
		},
	}
}

// noresult exits in the middle of the turn, without the final result event.
func noresult() Script {
	return Script{
		Name:   "noresult",
		Prompt: "Build the project.",
		Result: false,
		Msgs: []Msg{
			{Wait: 1 * sec, Every: 80 * time.Millisecond,
				Text:  words("Starting the build."),
				Calls: []Call{{Kind: Shell, Command: "make build", Output: "go build ./...\n", Took: 1 * sec}},
				Stop:  "tool_use", In: 1200, Out: 30, CostUSD: "0.0041"},
		},
	}
}
