package monitor

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestLineReader(t *testing.T) {
	in := "a\r\nbb\n\n" + strings.Repeat("x", 100) + "\nccc\n" + strings.Repeat("y", 50) + "\nlast"
	for name, r := range map[string]io.Reader{
		"whole":   strings.NewReader(in),
		"onebyte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":  iotest.HalfReader(strings.NewReader(in)),
	} {
		t.Run(name, func(t *testing.T) {
			lr := NewLineReader(r, 64)
			var got []string
			for {
				l, ok := lr.Next()
				if !ok {
					break
				}
				if lr.Skipped() {
					got = append(got, "<skipped>")
					continue
				}
				got = append(got, string(l))
			}
			want := []string{"a", "bb", "", "<skipped>", "ccc", strings.Repeat("y", 50), "last"}
			if strings.Join(got, "|") != strings.Join(want, "|") || lr.Err() != nil {
				t.Fatalf("got %q err %v, want %q", got, lr.Err(), want)
			}
		})
	}
}

// countingReader serves n bytes of a repeated pattern without holding them.
type countingReader struct {
	remaining int
	fill      byte
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.remaining == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.remaining)
	for i := range p[:n] {
		p[i] = c.fill
	}
	c.remaining -= n
	return n, nil
}

// A 64 MiB line of binary bytes is skipped without being held: the
// reader's buffer never grows past the cap, and the engine counts the line
// as unparsed and goes on.
func TestLineReaderHugeLine(t *testing.T) {
	const cap = 1 << 20
	r := io.MultiReader(strings.NewReader(`{"type":"agent_start"}`+"\n"),
		&countingReader{remaining: 64 << 20, fill: 0xff},
		strings.NewReader("\n"+`{"type":"agent_end","messages":[]}`+"\n"))
	lr := NewLineReader(r, cap)
	e, _ := New(Options{Format: FormatPi})
	for {
		l, ok := lr.Next()
		if !ok {
			break
		}
		if lr.Skipped() {
			e.FeedSkipped(l, time.Time{})
			continue
		}
		e.Feed(l, time.Time{})
	}
	if len(lr.buf) > cap+1 {
		t.Fatalf("buffer grew to %d bytes, cap %d", len(lr.buf), cap)
	}
	r2 := e.Report()
	if r2.Lines != 3 || r2.Unparsed != 1 || !r2.Result {
		t.Fatalf("report %s, want 3 lines, 1 unparsed, result", js(r2))
	}
}

// A line at the cap is read whole; one byte more is skipped.
func TestLineReaderCapBoundary(t *testing.T) {
	for _, n := range []int{64, 65} {
		lr := NewLineReader(bytes.NewReader(append(bytes.Repeat([]byte("z"), n), '\n')), 64)
		l, ok := lr.Next()
		if !ok || lr.Skipped() != (n > 64) || !lr.Skipped() && len(l) != n {
			t.Errorf("len %d: ok=%v skipped=%v got %d", n, ok, lr.Skipped(), len(l))
		}
	}
}

// The head of a skipped line carries its timestamp: it moves the clock
// like any other timestamped line, so a gap before it still trips.
func TestSkippedLineMovesTheClock(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	long := t0.Add(9*time.Minute).Format(time.RFC3339Nano) + " " + strings.Repeat("x", 200)
	in := t0.Format(time.RFC3339Nano) + ` {"type":"agent_start"}` + "\n" + long + "\n" +
		t0.Add(18*time.Minute).Format(time.RFC3339Nano) + ` {"type":"turn_start"}` + "\n"
	lr := NewLineReader(strings.NewReader(in), 100)
	e, _ := New(Options{Format: FormatPi})
	for {
		l, ok := lr.Next()
		if !ok {
			break
		}
		if lr.Skipped() {
			e.FeedSkipped(l, time.Time{})
			continue
		}
		e.Feed(l, time.Time{})
	}
	if r := e.Report(); r.Lines != 3 || r.Unparsed != 1 || len(r.Trips) != 0 {
		t.Fatalf("report %s: 9 minutes, then 9 more, is no stall", js(r))
	}
}
