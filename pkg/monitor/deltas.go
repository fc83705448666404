package monitor

import (
	"strings"

	"turnwatch.dev/turnwatch/pkg/agents"
)

// A stream that hides the model's deltas (Report.DeltasHidden): the CLIs
// whose row of agents.CLIs names a DeltasFix print whole messages, always
// or without a flag. The detectors that read deltas cannot see such a
// stream.

// BlindDetectors are the detectors that cannot see a stream that hides
// the model's deltas: degeneration (it counts whitespace-only deltas),
// repetition (it sees a run only once the whole block is written) and the
// stall inside a message (a long message and a hung model look alike).
var BlindDetectors = []string{DetectorDegeneration, DetectorRepetition, DetectorStall}

// DeltasHiddenFix is what makes a stream of format show its deltas: the
// flag to run the CLI with, or "none: " and why when the CLI has none;
// "" for the formats that print deltas and unknown ones (the CLI's
// DeltasFix in agents.CLIs).
func DeltasHiddenFix(format string) string {
	c, _ := agents.Lookup(format)
	return c.DeltasFix
}

// DeltasHiddenMessage is the sentence that says a stream of format hides
// its deltas: which detectors cannot see (BlindDetectors), and the fix
// (DeltasHiddenFix) when there is one to name.
func DeltasHiddenMessage(format string) string {
	var b strings.Builder
	b.WriteString("the stream shows no deltas: ")
	for i, d := range BlindDetectors {
		switch {
		case i == 0:
		case i == len(BlindDetectors)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(blindPhrase(d))
	}
	b.WriteString(" cannot be seen")
	if fix := DeltasHiddenFix(format); fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(fix)
	}
	return b.String()
}

// blindPhrase names what a blind detector cannot see.
func blindPhrase(detector string) string {
	if detector == DetectorStall {
		return "a stall inside a message"
	}
	return detector
}

// deltaSight is what the stream showed of the model's deltas, decided
// once for the rest of the stream (across reopened turns, after a trip,
// across checkpoints): seen at the first text or thinking delta of any
// agent; hidden when, before that, a message of the main agent that
// carried text or thinking as whole blocks (message.whole) completed
// (Report.DeltasHidden). A stream with no text or thinking decides nothing.
type deltaSight struct {
	seen, hidden bool
}

func (d *deltaSight) decided() bool { return d.seen || d.hidden }

// judge decides on m, a main agent's message that completed: its end, the
// end of input, or the trip that ended the turn inside it. A message the
// CLI wrote itself (Claude Code's API error text, model "<synthetic>") was
// never streamed by a model, so it says nothing about the stream's deltas.
func (d *deltaSight) judge(m *message) {
	if !d.decided() && m.Whole && !m.Deltas && string(m.Model.bytes()) != syntheticModel {
		d.hidden = true
	}
}

// syntheticModel is the model Claude Code names on the messages it writes
// itself (an API error's text).
const syntheticModel = "<synthetic>"

// DeltasHidden says the stream hides the model's deltas (Report.DeltasHidden),
// without building a Report: the sidecar asks after every line.
func (e *Engine) DeltasHidden() bool { return e.f.Deltas.hidden }
