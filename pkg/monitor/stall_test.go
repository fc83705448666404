package monitor

import (
	"fmt"
	"testing"
	"time"
)

func TestStallCheck(t *testing.T) {
	g := DefaultGuards()
	tests := []struct {
		gap         time.Duration
		outstanding int
		want        string
	}{
		{10 * time.Minute, 0, ""}, // strict: exactly the budget is fine
		{10*time.Minute + 1, 0, "no output for more than 10m0s while the model was generating"},
		{29 * time.Minute, 1, ""},
		{30*time.Minute + time.Second, 2, "no output for more than 30m0s while a tool call was outstanding"},
	}
	for _, tt := range tests {
		_, msg, failed := stall(&State{Guards: g, Gap: tt.gap, Outstanding: tt.outstanding})
		if failed != (tt.want != "") || msg != tt.want {
			t.Errorf("gap %v outstanding %d: %q, want %q", tt.gap, tt.outstanding, msg, tt.want)
		}
	}
	if _, _, failed := stall(&State{Gap: time.Hour}); failed {
		t.Error("a zero budget switches the stall off")
	}
}

// Stall with kubectl --timestamps lines: every timestamped line moves the
// clock (unparsed ones too); the gap is judged before the line that ends
// it, and the trip names the last line before the gap; no stall after the
// turn ended or at the end of input.
func TestStallWithTimestamps(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, l string) string { return t0.Add(d).Format(time.RFC3339Nano) + " " + l }
	call := js(map[string]any{"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": map[string]any{}})
	done := js(map[string]any{"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "isError": false})
	tests := []struct {
		name  string
		lines []string
		want  string // trip as "line:message", "" for none
	}{
		{"generating, over", []string{at(0, `{"type":"agent_start"}`), at(time.Minute, `{"type":"turn_start"}`), at(12*time.Minute, `{"type":"turn_start"}`)},
			"2:no output for more than 10m0s while the model was generating"},
		{"generating, exactly", []string{at(0, `{"type":"agent_start"}`), at(10*time.Minute, `{"type":"turn_start"}`)}, ""},
		{"unparsed lines move the clock", []string{at(0, `{"type":"agent_start"}`), at(8*time.Minute, `garbage`), at(16*time.Minute, `{"type":"turn_start"}`)}, ""},
		{"tool outstanding", []string{at(0, call), at(25*time.Minute, done)}, ""},
		{"tool outstanding, over", []string{at(0, call), at(31*time.Minute, done)}, "1:no output for more than 30m0s while a tool call was outstanding"},
		{"answered, then generating", []string{at(0, call), at(time.Minute, done), at(12*time.Minute, `{"type":"turn_start"}`)},
			"2:no output for more than 10m0s while the model was generating"},
		{"after the final result", []string{at(0, `{"type":"agent_end","messages":[]}`), at(time.Hour, `{"type":"auto_retry_start"}`)}, ""},
		{"reopened", []string{at(0, `{"type":"agent_end","messages":[]}`), at(time.Hour, `{"type":"agent_start"}`), at(2*time.Hour, `{"type":"turn_start"}`)},
			"2:no output for more than 10m0s while the model was generating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, FormatPi, DefaultGuards(), tt.lines)
			got := ""
			if len(r.Trips) > 0 {
				got = fmt.Sprintf("%d:%s", r.Trips[0].Line, r.Trips[0].Message)
				if r.Trips[0].Class != ClassStalled || r.Trips[0].Detector != DetectorStall {
					t.Errorf("trip %s", js(r.Trips[0]))
				}
			}
			if got != tt.want {
				t.Fatalf("trip %q, want %q", got, tt.want)
			}
		})
	}
}

// Live mode: Tick judges the clock when no line arrives.
func TestStallTick(t *testing.T) {
	e, _ := New(Options{Format: FormatPi})
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	if e.Tick(t0) != nil {
		t.Fatal("the first tick starts the clock")
	}
	e.Feed([]byte(`{"type":"agent_start"}`), t0.Add(time.Minute))
	if e.Tick(t0.Add(11*time.Minute)) != nil {
		t.Fatal("10m since the last line is within budget")
	}
	trip := e.Tick(t0.Add(11*time.Minute + time.Second))
	if trip == nil || trip.Detector != DetectorStall || trip.Line != 1 {
		t.Fatalf("trip %+v, want stall at line 1", trip)
	}
	if e.Tick(t0.Add(time.Hour)) != nil {
		t.Fatal("evaluation ends at the first trip")
	}
}

// StallDue agrees with Tick and changes nothing.
func TestStallDue(t *testing.T) {
	e, _ := New(Options{Format: FormatClaude})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if e.StallDue(t0.Add(time.Hour)) {
		t.Fatal("due before the clock started")
	}
	e.Feed([]byte(t0.Format(time.RFC3339Nano)+` {"type":"system","subtype":"init"}`), time.Time{})
	if e.StallDue(t0.Add(10 * time.Minute)) {
		t.Fatal("due at the budget")
	}
	if !e.StallDue(t0.Add(10*time.Minute + time.Second)) {
		t.Fatal("not due past the budget")
	}
	if e.Report().Trips == nil || len(e.Report().Trips) != 0 {
		t.Fatal("StallDue judged")
	}
	if tr := e.Tick(t0.Add(10*time.Minute + time.Second)); tr == nil || tr.Detector != DetectorStall {
		t.Fatalf("Tick: %+v", tr)
	}
}
