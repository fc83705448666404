package monitor

import (
	"reflect"
	"strings"
	"testing"
)

// The chain is one visible list in the order within one event
// (docs/design.md#order-within-one-event).
func TestChainOrder(t *testing.T) {
	var got []string
	for _, l := range chain {
		reason, _, _ := l.check(&State{Guards: Guards{StepBudget: 1, IdenticalCalls: 1, SilentTurns: 1, StallTimeout: 1, ToolTimeout: 1,
			WhitespaceDeltas: 1, WhitespaceBytes: 1, CycleRepeats: 2, ErrorRepeats: 1, RepeatedTextBytes: 1}, Steps: 2,
			AgentCounters: AgentCounters{Streak: 1, Silent: 2, ErrorStreak: 1}, WhitespaceDeltas: 1, Cost: 2, Cap: 1, StopReason: StopLength, Gap: 2, Cycle: 2, CyclePeriod: 2,
			RepeatBytes: 1, RepeatPeriod: 1})
		got = append(got, reason)
	}
	want := "stall degeneration repetition stepBudget identicalCalls cycles repeatedErrors spend budget lengthStop silentRun"
	if strings.Join(got, " ") != want {
		t.Fatalf("chain %v, want %s", got, want)
	}
	for _, l := range chain {
		if l.nudge != (l.at == atMessageEnd) {
			t.Error("only the silent run nudges")
		}
	}
	var split []string
	for p := range chainAt {
		for _, l := range chainAt[p] {
			if l.at != phase(p) {
				t.Errorf("a check of phase %d is judged at %d", l.at, p)
			}
			r, _, _ := l.check(&State{Guards: Guards{StepBudget: 1}, Steps: 2, StopReason: StopLength})
			split = append(split, r)
		}
	}
	if len(split) != len(chain) {
		t.Errorf("the phases hold %d checks, the chain %d", len(split), len(chain))
	}
}

// A check reads State and never changes it: the fold passes its own.
func TestChecksDoNotChangeState(t *testing.T) {
	s := State{Guards: Guards{StepBudget: 1, IdenticalCalls: 1, SilentTurns: 1, StallTimeout: 1, ToolTimeout: 1,
		WhitespaceDeltas: 1, WhitespaceBytes: 1, CycleRepeats: 2, ErrorRepeats: 1, RepeatedTextBytes: 1}, Steps: 2,
		AgentCounters: AgentCounters{Streak: 1, Silent: 2, ErrorStreak: 1}, WhitespaceDeltas: 1, Cost: 2, Cap: 1, StopReason: StopLength, Gap: 2, Cycle: 2, CyclePeriod: 2,
		RepeatBytes: 1, RepeatPeriod: 1, Outstanding: 1}
	for _, l := range chain {
		c := s
		l.check(&c)
		if !reflect.DeepEqual(c, s) {
			t.Errorf("a check changed State: %+v, was %+v", c, s)
		}
	}
}

// Order within one event: each tool call in order, step budget before
// identical calls; then spend; then the stop reason; then the nudge.
func TestOrderWithinOneEvent(t *testing.T) {
	call := func(id string, q string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": "Grep", "input": map[string]any{"q": q}}
	}
	t.Run("step budget before identical calls", func(t *testing.T) {
		// Three identical calls, then one message with the 4th identical call
		// which is also step 4 of a budget of 3.
		lines := []string{cAssistant("m1", []any{call("a", "x"), call("b", "x"), call("c", "x")}, "tool_use"),
			cAssistant("m2", []any{call("d", "x")}, "tool_use")}
		r := replayLines(t, FormatClaude, guards(func(g *Guards) { g.StepBudget = 3 }), lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorStepBudget || r.Trips[0].Line != 2 {
			t.Fatalf("trips %s, want stepBudget at line 2", js(r.Trips))
		}
	})
	t.Run("calls in order within one message", func(t *testing.T) {
		lines := []string{cAssistant("m1", []any{call("a", "x"), call("b", "x"), call("c", "x"), call("d", "x"), call("e", "y")}, "tool_use")}
		r := replayLines(t, FormatClaude, DefaultGuards(), lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorIdenticalCalls || r.Steps != 4 {
			t.Fatalf("steps %d trips %s, want identicalCalls at the 4th call (step 4)", r.Steps, js(r.Trips))
		}
	})
	t.Run("tool call before spend", func(t *testing.T) {
		// The pi message_end carries the 4th identical call and a cost over the cap.
		s := &stream{}
		for i := 0; i < 3; i++ {
			s.piToolOnly("grep", map[string]any{"q": "x"}, false)
		}
		m := piMsg([]any{piCall("last", "grep", map[string]any{"q": "x"})}, 9, "toolUse")
		s.add(js(map[string]any{"type": "message_end", "message": m}))
		r := replayLines(t, FormatPi, guards(func(g *Guards) { g.MaxCostUSD = "1" }), s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorIdenticalCalls {
			t.Fatalf("trips %s, want identicalCalls before spend", js(r.Trips))
		}
	})
	t.Run("degeneration before tool calls", func(t *testing.T) {
		// A claude line can't carry both, but a pi toolcall_end can't either;
		// the fold still orders them: build the event by hand.
		e, _ := New(Options{Format: FormatPi, Guards: guards(func(g *Guards) { g.WhitespaceDeltas, g.StepBudget = 1, 0 })})
		e.ev = event{msgOpen: true, hasDelta: true, delta: []byte(" ")}
		e.ev.addCall([]byte("c"), []byte("bash"), []byte("{}"), true)
		e.f.Lines = 1
		e.apply()
		if len(e.f.Trips) != 1 || e.f.Trips[0].Detector != DetectorDegeneration || e.st.Steps != 0 {
			t.Fatalf("trips %+v steps %d, want degeneration before the call is seen", e.f.Trips, e.st.Steps)
		}
	})
	t.Run("spend before the nudge", func(t *testing.T) {
		s := &stream{}
		for i := 0; i < 12; i++ {
			s.piToolOnly("bash", map[string]any{"c": s.id("x")}, false)
		}
		m := piMsg([]any{piCall("last", "bash", map[string]any{"c": "y"})}, 9, "toolUse")
		s.add(js(map[string]any{"type": "message_end", "message": m}))
		r := replayLines(t, FormatPi, guards(func(g *Guards) { g.MaxCostUSD = "1" }), s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorSpend || len(r.Nudges) != 0 {
			t.Fatalf("trips %s nudges %s, want spend and no nudge", js(r.Trips), js(r.Nudges))
		}
	})
}
