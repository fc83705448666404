package scriptedmodel

import (
	"strings"
	"time"
)

// A drill proves the run's own guards (docs/drill.md), so each loop and
// degeneration scenario plays past the guards the server was given
// (Options.Guards): a team that raised identicalCalls to 10 still sees its
// guard trip. With zero-valued guards (the tests that give none) and with
// the defaults, every scenario plays exactly its historical length, which
// test/realcli and test/e2e rely on.

// Today's lengths: the least each scenario plays.
const (
	leastLoop      = loopCalls // identicalLoop, subagentLoop, repeatedErrors, cycle's alternations
	leastSilent    = 16        // silentRun's calls
	loopMargin     = 2         // calls past the guard's limit
	silentMargin   = 4         // silentRun's tool-only messages past silentTurns
	sentence       = "All work and no play makes a dull agent. "
	leastSentences = 120 // repetition: 4920 bytes, past the default 4096
	// leastSpace* are whitespace's deltas: 256 of 2 bytes, twice the
	// default whitespaceDeltas (128); the default whitespaceBytes (8192)
	// is never the one that trips.
	leastSpaceThinking = 64
	leastSpaceText     = 192
	// spaceChunk is the size of one delta when whitespace plays past a raised
	// whitespaceDeltas by bytes instead: far fewer deltas.
	spaceChunk = 64
)

// streaks is how many times a loop guard must trip to stop the turn: with
// warnFirst the first streak is only a warning (docs/design.md).
func (o *Options) streaks() int {
	if o.Guards.WarnFirst {
		return 2
	}
	return 1
}

// loopLength is how many calls (or alternations, or messages) a loop
// scenario plays against a guard of limit: least, or past the limit by
// margin, every streak counted.
func (o *Options) loopLength(least, limit, margin int) int {
	return max(least, limit*o.streaks()+margin)
}

func (o *Options) identicalCalls() int {
	return o.loopLength(leastLoop, o.Guards.IdenticalCalls, loopMargin)
}

func (o *Options) cycleAlternations() int {
	return o.loopLength(leastLoop, o.Guards.CycleRepeats, loopMargin)
}

func (o *Options) errorCalls() int {
	return o.loopLength(leastLoop, o.Guards.ErrorRepeats, loopMargin)
}

func (o *Options) silentCalls() int {
	return o.loopLength(leastSilent, o.Guards.SilentTurns, silentMargin)
}

// past is n and half again: the margin a delta count or a byte count is
// played past its guard by (a CLI may merge or drop a few deltas).
func past(n int) int { return n + n/2 }

// whitespaceReply streams whitespace-only thinking and text deltas: today's
// 256 deltas while they pass the guards (0 is off), else enough to pass
// the cheaper of whitespaceDeltas (2-byte deltas) and whitespaceBytes
// (64-byte deltas).
func (o *Options) whitespaceReply() Reply {
	n, b := o.Guards.WhitespaceDeltas, o.Guards.WhitespaceBytes
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
func (o *Options) repetitionReply() Reply {
	copies := leastSentences
	if n := o.Guards.RepeatedTextBytes; n > 0 {
		copies = max(copies, (n+n/5)/len(sentence)+1) // 20% past, as today's 4920 is past 4096
	}
	perDelta := (copies*copies + leastSentences*leastSentences - 1) / (leastSentences * leastSentences)
	deltas := (copies + perDelta - 1) / perDelta
	return Reply{Text: repeat(strings.Repeat(sentence, perDelta), deltas), Stop: StopEnd, Output: 2000}
}

// pause is how long the stall scenario holds its stream: the server's
// pause, and at least twice stallTimeout.
func (o *Options) pause() time.Duration {
	return max(o.Pause, 2*o.Guards.StallTimeout.D())
}
