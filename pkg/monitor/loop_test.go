package monitor

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// feedSpec feeds data to e by the rule Loop keeps, written out plainly:
// every newline ends a line (a last line without one is a line too), a line
// over maxLine bytes is one unparsed line whose first 64 bytes move the
// clock, a kept line loses a trailing CR.
func feedSpec(e *Engine, data []byte, maxLine int) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		if len(l) > maxLine {
			e.FeedSkipped(l[:min(len(l), 64)], time.Time{})
			continue
		}
		e.Feed(bytes.TrimSuffix(l, []byte("\r")), time.Time{})
	}
	e.Finish()
}

// loopAgrees replays data through Loop and through feedSpec and compares
// the reports.
func loopAgrees(t *testing.T, data []byte, maxLine int) Report {
	t.Helper()
	got, err := Replay(mustNew(t, Options{Format: FormatAuto}), bytes.NewReader(data), maxLine)
	if err != nil {
		t.Fatal(err)
	}
	spec := mustNew(t, Options{Format: FormatAuto})
	feedSpec(spec, data, maxLine)
	if want := spec.Report(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the loop's report\n%+v\nthe rule's\n%+v", got, want)
	}
	return got
}

func mustNew(t *testing.T, opts Options) *Engine {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLoopLines(t *testing.T) {
	call := `{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls"}}`
	tests := []struct {
		name           string
		data           string
		lines, skipped int
	}{
		{"empty", "", 0, 0},
		{"blank lines are lines", "\n\n", 2, 0},
		{"last line without newline", call + "\n" + call, 2, 0},
		{"crlf", call + "\r\n", 1, 0},
		{"a line at the bound is read", strings.Repeat("y", 100) + "\n", 1, 0},
		{"a line over the bound is one line", call + "\n" + strings.Repeat("y", 101) + "\n" + call + "\n", 3, 1},
		{"a long last line without newline", call + "\n" + strings.Repeat("y", 350), 2, 1},
		{"long lines in a row", strings.Repeat(strings.Repeat("z", 250)+"\n", 3), 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loopAgrees(t, []byte(tt.data), 100)
			if r.Lines != tt.lines || r.Unparsed < tt.skipped {
				t.Fatalf("lines %d, unparsed %d; want %d lines, at least %d unparsed", r.Lines, r.Unparsed, tt.lines, tt.skipped)
			}
		})
	}
}

// A line over the bound moves the clock with its head: the stall between
// the lines around it is not seen, as in the sidecar.
func TestLoopSkippedLineMovesTheClock(t *testing.T) {
	g := DefaultGuards()
	g.StallTimeout = Duration(time.Minute)
	line := func(at, body string) string { return "2026-01-05T09:" + at + "Z " + body + "\n" }
	data := line("00:00", `{"type":"agent_start"}`) + line("00:50", strings.Repeat("y", 200)) + line("01:40", `{"type":"agent_end"}`)
	r, err := Replay(mustNew(t, Options{Format: FormatPi, Guards: g}), strings.NewReader(data), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trips) != 0 || r.Lines != 3 || r.Unparsed != 1 {
		t.Fatalf("report %+v: want 3 lines, 1 unparsed, no stall", r)
	}
	without := line("00:00", `{"type":"agent_start"}`) + line("01:40", `{"type":"agent_end"}`)
	if r, _ := Replay(mustNew(t, Options{Format: FormatPi, Guards: g}), strings.NewReader(without), 100); len(r.Trips) != 1 {
		t.Fatalf("without the long line: %+v, want the stall", r)
	}
}

// FuzzLoop: the loop counts and feeds lines as the plain rule does, for
// any input and bound.
func FuzzLoop(f *testing.F) {
	f.Add([]byte("{\"type\":\"agent_start\"}\n"+strings.Repeat("x", 70)+"\r\n\n{}"), uint8(40))
	f.Add([]byte("2026-01-05T09:00:00Z "+strings.Repeat("y", 300)), uint8(1))
	f.Add([]byte("\r\n\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, bound uint8) {
		loopAgrees(t, data, int(bound)%128+1)
	})
}
