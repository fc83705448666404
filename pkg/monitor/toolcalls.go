package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// Tool calls and their answers: steps, the identical-call streak, cycles,
// the repeated-error streak and answer-aware identity.

// call folds one tool call: a step at the first sight of its id, the
// identity comparison once its arguments are complete.
func (e *Engine) call(c callRef) bool {
	var key uint64
	if len(c.id) == 0 {
		e.f.Anon++
		key = mix64(e.f.Anon ^ 0xa5a5a5a5a5a5a5a5)
	} else {
		key = idHash(c.id)
	}
	f, isNew, evicted := e.f.Calls.get(key)
	if evicted&callOutstanding != 0 {
		e.st.Outstanding--
	}
	if isNew {
		e.st.Steps++
		if e.f.Msg.Open {
			e.f.Msg.Calls++
		}
		if e.evaluate(atCall, e.f.Lines) {
			return true
		}
	}
	if !c.complete || f&callCompared != 0 {
		return false
	}
	f |= callCompared
	if f&callAnswered == 0 {
		f |= callOutstanding
		e.st.Outstanding++
	}
	if e.isWorld(c.name) {
		f |= callWorld
	}
	e.f.Calls.set(key, f)
	sig := callSig(c.name, c.args)
	if e.st.Streak > 0 && sig == e.f.LastSig {
		e.st.Streak++
	} else {
		e.f.LastSig, e.st.Streak = sig, 1
	}
	e.f.X.Seq++
	e.f.Calls.setSig(key, sig, e.f.X.Seq)
	e.f.X.Cyc.push(sig)
	e.st.Cycle, e.st.CyclePeriod = e.f.X.Cyc.best()
	return e.evaluate(atCall, e.f.Lines)
}

// answer folds a tool result: the call is no longer outstanding, and a
// successful answer of a worldTools tool resets the identical-call streak
// and the cycle count (the world moved). An answer marked as an error is a
// refusal: nothing ran, the streak stands. With answerAware, a successful
// answer that differs from the previous identical call's restarts both
// counts at its call. Then the repeated-error streak, judged on the
// answer; a restated answer counts once.
func (e *Engine) answer(id, name []byte, isError bool, text []byte) bool {
	key := idHash(id)
	ci, known := e.f.Calls.lookup(key)
	f := ci.F
	if known {
		if f&callOutstanding != 0 {
			e.st.Outstanding--
		}
		e.f.Calls.set(key, f&^callOutstanding|callAnswered)
		if f&callAnswered != 0 {
			return false // a restatement
		}
	}
	world := f&callWorld != 0 || len(name) > 0 && e.isWorld(name)
	if world && !isError {
		e.st.Streak, e.f.LastSig = 0, 0
		e.f.X.Cyc = cycleTrack{}
		e.st.Cycle, e.st.CyclePeriod = 0, 0
	}
	ans := answerHash(text)
	if e.st.Guards.AnswerAware && !isError && known && f&callCompared != 0 {
		e.answerAware(ci, ans)
	}
	if !isError {
		e.st.ErrorStreak = 0
		e.st.Answered++
		return false
	}
	if e.st.ErrorStreak > 0 && ans == e.f.X.LastErr {
		e.st.ErrorStreak++
	} else {
		e.st.ErrorStreak, e.f.X.LastErr = 1, ans
	}
	return e.evaluate(atAnswer, e.f.Lines)
}

// answerAware compares a successful answer with the last successful
// answer to the same signature; a new one restarts the identical-call
// streak and the cycle count at its call (docs/design.md#answer-aware-identity).
func (e *Engine) answerAware(ci callInfo, ans uint64) {
	x := &e.f.X
	slot := -1
	for i := range x.Answers {
		if x.Answers[i].Sig == ci.Sig && x.Answers[i].Sig != 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = x.NextAns
		x.NextAns = (x.NextAns + 1) % answerMemory
		x.Answers[slot] = answerSeen{Sig: ci.Sig, Ans: ans}
		return // no previous answer to compare with
	}
	moved := x.Answers[slot].Ans != ans
	x.Answers[slot].Ans = ans
	if !moved || ci.Seq <= 0 || ci.Seq > x.Seq {
		return
	}
	k := int(x.Seq - ci.Seq + 1) // calls from the answered one to the latest
	if ci.Sig == e.f.LastSig && e.st.Streak > k {
		e.st.Streak = k
	}
	x.Cyc.restart(k)
	e.st.Cycle, e.st.CyclePeriod = x.Cyc.best()
}

// answerHash identifies an answer's text: a raw JSON value compared as
// canonical JSON (raw string contents hash as a string), or nothing.
func answerHash(text []byte) uint64 {
	if len(text) == 0 {
		return combine(tagNull, 0)
	}
	return callSig(nil, text)
}

func (e *Engine) isWorld(name []byte) bool {
	if len(e.world) == 0 {
		return false
	}
	if bytes.IndexByte(name, '\\') >= 0 { // compare the decoded name
		var buf [256]byte
		name = buf[:jsonscan.UnescapeTo(buf[:], name)]
		_, ok := e.world[string(name)]
		return ok
	}
	_, ok := e.world[string(name)]
	return ok
}
