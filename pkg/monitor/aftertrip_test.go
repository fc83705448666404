package monitor

import (
	"testing"
	"time"
)

// TestAfterTripClassified: after a stopping trip nothing more is applied
// (no steps, cost, result, trips or nudges), but every later line is still
// counted in lines and classified into unparsed or ignored, so the report
// covers the whole input (docs/design.md#after-a-stopping-trip).
func TestAfterTripClassified(t *testing.T) {
	var s stream
	s.add(`{"type":"agent_start"}`)
	for range 4 {
		s.piToolOnly("read", map[string]any{"path": "a"}, false)
	}
	tripLine := s.len() - 2 // the 4th call's message_end: its arguments are complete there
	s.piToolOnly("read", map[string]any{"path": "b"}, false)
	s.add(`not json`, `{"type":"session","version":3,"id":"x"}`, `{"type":"queue_update"}`, ``, `{"type":"mystery"}`)
	s.piSpeak("done")
	s.add(`{"type":"agent_end"}`)

	r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
	want := Report{Format: FormatPi, Lines: s.len(), Steps: 4, CostUSD: "0.00", StopReason: StopToolUse,
		Trips:    []Trip{{Class: ClassRunaway, Detector: DetectorIdenticalCalls, Message: "repeated an identical tool call 4 times", Line: tripLine}},
		Nudges:   []Nudge{},
		Unparsed: 2, Ignored: 2,
		AgentSessionID: "x"} // the session header after the trip is read too: the id is no verdict
	if js(r) != js(want) {
		t.Errorf("report\n got %s\nwant %s", js(r), js(want))
	}
}

// TestAfterStallClassified: the line whose gap trips the stall is after the
// trip: it is classified, not applied; so is a line the reader skipped.
func TestAfterStallClassified(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name              string
		feed              func(e *Engine)
		unparsed, ignored int
		steps             int
	}{
		{"an ignored line ends the gap", func(e *Engine) { e.Feed([]byte(`{"type":"queue_update"}`), t0.Add(time.Hour)) }, 0, 1, 0},
		{"an unparsed line ends the gap", func(e *Engine) { e.Feed([]byte(`garbage`), t0.Add(time.Hour)) }, 1, 0, 0},
		{"a skipped line ends the gap", func(e *Engine) { e.FeedSkipped([]byte(`{"type":`), t0.Add(time.Hour)) }, 1, 0, 0},
		{"a skipped line after the trip", func(e *Engine) {
			e.Feed([]byte(`{"type":"queue_update"}`), t0.Add(time.Hour))
			e.FeedSkipped([]byte(`{"type":`), t0.Add(2*time.Hour))
		}, 1, 1, 0},
		{"a tool call ends the gap: not a step", func(e *Engine) {
			e.Feed([]byte(`{"type":"tool_execution_start","toolCallId":"c1","toolName":"read","args":{}}`), t0.Add(time.Hour))
		}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := New(Options{Format: FormatPi})
			e.Feed([]byte(`{"type":"agent_start"}`), t0)
			tt.feed(e)
			e.Finish()
			r := e.Report()
			if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorStall {
				t.Fatalf("trips %v, want one stall", r.Trips)
			}
			if r.Unparsed != tt.unparsed || r.Ignored != tt.ignored || r.Steps != tt.steps {
				t.Errorf("unparsed %d ignored %d steps %d, want %d %d %d", r.Unparsed, r.Ignored, r.Steps, tt.unparsed, tt.ignored, tt.steps)
			}
		})
	}
}
