package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A drill proves the run's own guards (docs/drill.md), so each loop and
// degeneration scenario plays past the guards the server was given
// (Options.Guards): a team that raised identicalCalls to 10 still sees its
// guard trip. With no guards (the tests that give none) and with the
// defaults, every scenario plays exactly its historical length, which
// test/realcli and test/e2e rely on.

// play is what a scenario's reply reads besides the conversation: the
// run's guards it plays past, and the error it answers with.
type play struct {
	guards
	errorStatus int
}

// guards are the guards the scenarios play past, read from the guards'
// JSON by their names (docs/design.md#thresholds-and-guards); 0 is off
// or not given.
type guards struct {
	IdenticalCalls    int      `json:"identicalCalls"`
	CycleRepeats      int      `json:"cycleRepeats"`
	ErrorRepeats      int      `json:"errorRepeats"`
	SilentTurns       int      `json:"silentTurns"`
	WarnFirst         bool     `json:"warnFirst"`
	WhitespaceDeltas  int      `json:"whitespaceDeltas"`
	WhitespaceBytes   int      `json:"whitespaceBytes"`
	RepeatedTextBytes int      `json:"repeatedTextBytes"`
	StallTimeout      duration `json:"stallTimeout"`
}

// parseGuards reads the guards' JSON; the names it does not read are
// left to the watchdog, which validates them all.
func parseGuards(raw json.RawMessage) (guards, error) {
	var g guards
	if len(strings.TrimSpace(string(raw))) == 0 {
		return g, nil
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return g, fmt.Errorf("scriptedmodel: guards: %w", err)
	}
	return g, nil
}

// duration is a guard's Go duration string ("15s").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}

// D is the time.Duration.
func (d duration) D() time.Duration { return time.Duration(d) }

// Today's lengths: the least each scenario plays.
const (
	leastLoop    = loopCalls // identicalLoop, subagentLoop, repeatedErrors, cycle's alternations
	leastSilent  = 16        // silentRun's calls
	loopMargin   = 2         // calls past the guard's limit
	silentMargin = 4         // silentRun's tool-only messages past silentTurns
	// silentWait is how many more calls silentRun makes while its nudge has
	// not reached the model: a CLI whose model answers at once makes a call
	// every 50 ms, faster than the sidecar reads the nudge's line, and a
	// real model told to report stops; one never told stops here.
	silentWait = 16
	// silentNudge is how the nudge reads to the model, as turnwatch-hook
	// prints it (cmd/turnwatch-hook/hook.go).
	silentNudge    = "turnwatch nudge (silentRun"
	sentence       = "All work and no play makes a dull agent. "
	leastSentences = 120 // repetition: 4920 bytes, past the default 4096
	// leastSpace* are whitespace's deltas: 256 of 2 bytes, twice the
	// default whitespaceDeltas (128); the default whitespaceBytes (8192)
	// is never the one that trips.
	leastSpaceThinking = 64
	leastSpaceText     = 192
	// spaceChunk is the size of one delta when whitespace plays past a
	// raised whitespaceDeltas by bytes instead: far fewer deltas.
	spaceChunk = 64
)

// streaks is how many times a loop guard must trip to stop the turn: with
// warnFirst the first streak is only a warning (docs/design.md).
func (g *guards) streaks() int {
	if g.WarnFirst {
		return 2
	}
	return 1
}

// loopLength is how many calls (or alternations, or messages) a loop
// scenario plays against a guard of limit: least, or past the limit by
// margin, every streak counted.
func (g *guards) loopLength(least, limit, margin int) int {
	return max(least, limit*g.streaks()+margin)
}

func (g *guards) identicalCalls() int {
	return g.loopLength(leastLoop, g.IdenticalCalls, loopMargin)
}

func (g *guards) cycleAlternations() int {
	return g.loopLength(leastLoop, g.CycleRepeats, loopMargin)
}

func (g *guards) errorCalls() int {
	return g.loopLength(leastLoop, g.ErrorRepeats, loopMargin)
}

func (g *guards) silentCalls() int {
	return g.loopLength(leastSilent, g.SilentTurns, silentMargin)
}

// past is n and half again: the margin a delta count or a byte count is
// played past its guard by (a CLI may merge or drop a few deltas).
func past(n int) int { return n + n/2 }

// whitespaceReply streams whitespace-only thinking and text deltas: today's
// 256 deltas while they pass the guards (0 is off), else enough to pass
// the cheaper of whitespaceDeltas (2-byte deltas) and whitespaceBytes
// (64-byte deltas).
func (g *guards) whitespaceReply() Reply {
	n, b := g.WhitespaceDeltas, g.WhitespaceBytes
	least := leastSpaceThinking + leastSpaceText
	r := Reply{Thinking: repeat("  ", leastSpaceThinking), Stop: StopEnd, Output: 4000}
	byCount, byBytes := 0, 0
	if n > 0 {
		byCount = past(n)
	}
	if b > 0 {
		byBytes = (past(b) + spaceChunk - 1) / spaceChunk
	}
	switch {
	case n == 0 && b == 0, n > 0 && 2*n <= least, b > 0 && past(b) <= 2*least:
		r.Text = repeat(" \n", leastSpaceText) // the guards trip on today's stream
	case byBytes > 0 && (byCount == 0 || byBytes < byCount):
		r.Text = repeat(strings.Repeat(" ", spaceChunk-1)+"\n", byBytes)
	default:
		r.Text = repeat(" \n", byCount-leastSpaceThinking)
	}
	return r
}

// repetitionReply streams one sentence over and over, past
// repeatedTextBytes. The deltas stay few: pi prints the whole message so
// far with each delta, twice, so its log grows as deltas times the
// message's bytes; 120 deltas of one sentence (590 KB of log) is today's,
// and a longer message packs more sentences in each delta to keep the log
// that size (160 deltas made 1 MiB, the e2e node's log rotation size, and
// the kept Pod's log could come back empty).
func (g *guards) repetitionReply() Reply {
	copies := leastSentences
	if n := g.RepeatedTextBytes; n > 0 {
		copies = max(copies, (n+n/5)/len(sentence)+1) // 20% past, as today's 4920 is past 4096
	}
	perDelta := (copies*copies + leastSentences*leastSentences - 1) / (leastSentences * leastSentences)
	deltas := (copies + perDelta - 1) / perDelta
	return Reply{Text: repeat(strings.Repeat(sentence, perDelta), deltas), Stop: StopEnd, Output: 2000}
}
