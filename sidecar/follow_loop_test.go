package sidecar

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// sidecarReport feeds data to an engine as the sidecar does: its own
// resumable lineReader (the last line flushed once the input is over), a cut
// line fed as a skipped one with the head it keeps (run_loop.go).
func sidecarReport(t *testing.T, data []byte, maxLine int) monitor.Report {
	t.Helper()
	eng, err := monitor.New(monitor.Options{Format: monitor.FormatAuto})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(data []byte, cut bool) {
		l := newLine(data, time.Time{}, cut)
		if l.Cut {
			eng.FeedSkipped(l.Data, time.Time{})
		} else {
			eng.Feed(l.Data, time.Time{})
		}
	}
	lr := newLineReader(bytes.NewReader(data), maxLine)
	for {
		line, cut, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, errPartialLine) {
				t.Fatal(err)
			}
			break
		}
		feed(line, cut)
	}
	if line, cut, ok := lr.flush(); ok {
		feed(line, cut)
	}
	eng.Finish()
	return eng.Report()
}

// The sidecar numbers lines as replay, calibrate, watch and explain do
// (monitor.Loop): the same count, the same lines over the bound unparsed.
func TestLinesAsTheLoop(t *testing.T) {
	call := `{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls"}}`
	for _, data := range []string{
		"",
		call + "\n" + strings.Repeat("y", 300) + "\n" + call + "\n",
		"2026-01-05T09:00:00Z " + strings.Repeat("z", 500) + "\n\n" + call,
		call + "\r\n" + strings.Repeat("w", 101) + "\r",
	} {
		sameAsLoop(t, []byte(data), 100)
	}
}

func sameAsLoop(t *testing.T, data []byte, maxLine int) {
	t.Helper()
	eng, err := monitor.New(monitor.Options{Format: monitor.FormatAuto})
	if err != nil {
		t.Fatal(err)
	}
	want, err := monitor.Replay(eng, bytes.NewReader(data), maxLine)
	if err != nil {
		t.Fatal(err)
	}
	if got := sidecarReport(t, data, maxLine); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: the sidecar's report\n%+v\nthe loop's\n%+v", data, got, want)
	}
}

func FuzzLinesAsTheLoop(f *testing.F) {
	f.Add([]byte("{\"type\":\"agent_start\"}\n"+strings.Repeat("x", 70)+"\r\n\n{}"), uint8(40))
	f.Add([]byte("2026-01-05T09:00:00Z "+strings.Repeat("y", 300)), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, bound uint8) {
		sameAsLoop(t, data, int(bound)%128+1)
	})
}
