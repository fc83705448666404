package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The pattern detectors' state (cycles, repeated errors, repeated text, answerAware, the
// subagents' slots) survives a checkpoint at every cut: the restored engine
// fed the rest reaches the uninterrupted one's report and state.
func TestCheckpointPatternStateEveryCut(t *testing.T) {
	s := &stream{}
	s.add(cInit())
	pat := "again and again, "
	for i := range 12 {
		a := []string{"", "A", "B"}[i%3]
		id := s.id("toolu")
		s.add(cSub(a, s.id("msg"), id, "Read", map[string]any{"f": i % 2}))
		s.add(cSubResult(a, id, fmt.Sprint("out ", i%4), i%3 == 1))
		if i%4 == 0 {
			for range 3 {
				s.add(js(map[string]any{"type": "stream_event", "parent_tool_use_id": nil, "event": map[string]any{
					"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": strings.Repeat(pat, 10)}}}))
			}
		}
	}
	s.add(cResult(0.25))
	g := DefaultGuards()
	g.CycleRepeats, g.AnswerAware, g.RepeatedTextBytes, g.ErrorRepeats = 3, true, 400, 3
	g2 := g
	g2.RepeatedTextBytes, g2.ErrorRepeats = 0, 0 // no trip: every cut sees all the state
	for _, guards := range []Guards{g, g2, DefaultGuards()} {
		opts := Options{Format: FormatClaude, Guards: guards}
		want := feedReport(t, opts, nil, s.lines)
		full, _ := New(opts)
		for _, l := range s.lines {
			full.Feed([]byte(l), time.Time{})
		}
		for cut := 0; cut <= len(s.lines); cut++ {
			first, _ := New(opts)
			for _, l := range s.lines[:cut] {
				first.Feed([]byte(l), time.Time{})
			}
			cp, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if got := feedReport(t, opts, cp, s.lines[cut:]); js(got) != js(want) {
				t.Fatalf("cut at %d:\n got %s\nwant %s", cut, js(got), js(want))
			}
			rest, _ := New(opts)
			if err := rest.Restore(cp); err != nil {
				t.Fatal(err)
			}
			for _, l := range s.lines[cut:] {
				rest.Feed([]byte(l), time.Time{})
			}
			if got, w := js(rest.State()), js(full.State()); got != w {
				t.Fatalf("cut at %d: state\n got %s\nwant %s", cut, got, w)
			}
		}
		t.Logf("guards %+v: %s", guards, js(want.Trips))
	}
}
