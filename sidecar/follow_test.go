package sidecar

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestLineReader(t *testing.T) {
	type got struct {
		line string
		cut  bool
	}
	cases := []struct {
		name    string
		in      string
		max     int
		want    []got
		wantEnd error // what next returns after the lines
		flushed *got  // what flush then returns
	}{
		{name: "plain", in: "a\nbb\n", max: 10, want: []got{{"a", false}, {"bb", false}}, wantEnd: io.EOF},
		{name: "crlf", in: "a\r\nb\n", max: 10, want: []got{{"a", false}, {"b", false}}, wantEnd: io.EOF},
		{name: "empty lines count", in: "\n\nx\n", max: 10, want: []got{{"", false}, {"", false}, {"x", false}}, wantEnd: io.EOF},
		{name: "cut at the bound", in: "0123456789abc\nok\n", max: 10, want: []got{{"0123456789", true}, {"ok", false}}, wantEnd: io.EOF},
		{name: "exactly the bound is whole", in: "0123456789\n", max: 10, want: []got{{"0123456789", false}}, wantEnd: io.EOF},
		{name: "last line without newline is pending", in: "a\npart", max: 10, want: []got{{"a", false}}, wantEnd: errPartialLine, flushed: &got{"part", false}},
		{name: "long pending line is cut", in: "0123456789abcdef", max: 4, wantEnd: errPartialLine, flushed: &got{"0123", true}},
		// Larger than bufio's buffer: read in pieces, only max bytes kept.
		{name: "many megabytes", in: strings.Repeat("x", 3<<20) + "\nnext\n", max: 1 << 10,
			want: []got{{strings.Repeat("x", 1<<10), true}, {"next", false}}, wantEnd: io.EOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLineReader(iotest.HalfReader(strings.NewReader(tc.in)), tc.max)
			for i, w := range tc.want {
				line, cut, err := lr.next()
				if err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				if string(line) != w.line || cut != w.cut {
					t.Fatalf("line %d = %.20q (len %d) cut=%v, want %.20q (len %d) cut=%v", i, line, len(line), cut, w.line, len(w.line), w.cut)
				}
			}
			if _, _, err := lr.next(); !errors.Is(err, tc.wantEnd) {
				t.Fatalf("end = %v, want %v", err, tc.wantEnd)
			}
			line, cut, ok := lr.flush()
			switch {
			case tc.flushed == nil && ok:
				t.Fatalf("flush = %q, want nothing", line)
			case tc.flushed != nil && (!ok || string(line) != tc.flushed.line || cut != tc.flushed.cut):
				t.Fatalf("flush = %q cut=%v ok=%v, want %q cut=%v", line, cut, ok, tc.flushed.line, tc.flushed.cut)
			}
			if lr.read != int64(len(tc.in)) {
				t.Fatalf("read = %d bytes, want %d", lr.read, len(tc.in))
			}
		})
	}
}

// A line that is still being written is picked up where it stopped.
func TestLineReaderGrowingInput(t *testing.T) {
	var src growing
	lr := newLineReader(&src, 100)
	src.add("first\nsec")
	if line, _, err := lr.next(); err != nil || string(line) != "first" {
		t.Fatalf("next = %q, %v", line, err)
	}
	if _, _, err := lr.next(); !errors.Is(err, errPartialLine) {
		t.Fatalf("next = %v, want errPartialLine", err)
	}
	src.add("ond\n")
	if line, _, err := lr.next(); err != nil || string(line) != "second" {
		t.Fatalf("next = %q, %v; want the whole line", line, err)
	}
}

// growing is a reader at whose end more data may arrive later, like a file.
type growing struct{ data []byte }

func (g *growing) add(s string) { g.data = append(g.data, s...) }

func (g *growing) Read(p []byte) (int, error) {
	if len(g.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.data)
	g.data = g.data[n:]
	return n, nil
}

func TestParseLogTime(t *testing.T) {
	cases := []struct {
		line string
		want string // RFC 3339 nano, "" for none
	}{
		{"2026-03-01T10:00:00.123456789Z {\"type\":\"x\"}", "2026-03-01T10:00:00.123456789Z"},
		{"2026-03-01T12:00:00.000000001+02:00 x", "2026-03-01T10:00:00.000000001Z"},
		{"2026-03-01T10:00:00Z ", "2026-03-01T10:00:00Z"},
		{"{\"type\":\"x\"}", ""},
		{"not-a-time {}", ""},
		{"", ""},
	}
	for _, tc := range cases {
		got, ok := parseLogTime([]byte(tc.line))
		if tc.want == "" {
			if ok {
				t.Errorf("%q: got %v, want none", tc.line, got)
			}
			continue
		}
		want, _ := time.Parse(time.RFC3339Nano, tc.want)
		if !ok || !got.Equal(want) {
			t.Errorf("%q: got %v %v, want %v", tc.line, got, ok, want)
		}
	}
}

func TestLogCursor(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name      string
		lines     []time.Time
		wantSince time.Time
		wantSeen  int
	}{
		{"none", nil, time.Time{}, 0},
		{"one", []time.Time{at(500)}, base, 1},
		{"equal timestamps", []time.Time{at(500), at(500), at(500)}, base, 3},
		{"same second", []time.Time{at(100), at(900)}, base, 2},
		{"next second resets", []time.Time{at(100), at(900), at(1200)}, base.Add(time.Second), 1},
		// An older line (stderr interleaved) is not resent from the cursor's
		// second, so it is not counted.
		{"older line", []time.Time{at(1200), at(999), at(1300)}, base.Add(time.Second), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c logCursor
			for _, l := range tc.lines {
				c.advance(l)
			}
			if !c.since.Equal(tc.wantSince) || c.seen != tc.wantSeen {
				t.Fatalf("cursor = %v/%d, want %v/%d", c.since, c.seen, tc.wantSince, tc.wantSeen)
			}
		})
	}
}
