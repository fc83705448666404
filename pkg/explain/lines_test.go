package explain

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// The timeline numbers lines as replay (and the sidecar) do, on every
// recorded scenario and on the loop and stall scenarios with a long line
// after their first: one over explain's old 8 MiB cut, which then numbered
// the rest of the line as one more, and one over the engine's 16 MiB bound.
func TestLineNumbersAsReplay(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "test", "fakeagent", "scenarios", "*", "*.log"))
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	long := map[string][]byte{
		"10MiB": longLine(10 << 20),
		"17MiB": longLine(monitor.DefaultMaxLine + 1<<20),
	}
	withLong := map[string]bool{}
	for _, f := range files {
		format, name := filepath.Base(filepath.Dir(f)), strings.TrimSuffix(filepath.Base(f), ".log")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(format+"/"+name, func(t *testing.T) { sameLines(t, format, data) })
		if n := strings.ToLower(name); !strings.Contains(n, "loop") && !strings.Contains(n, "stall") {
			continue
		}
		for size, l := range long {
			t.Run(format+"/"+name+"/"+size, func(t *testing.T) { sameLines(t, format, withLine(data, l)) })
		}
		withLong[format] = true
	}
	for _, f := range files {
		if format := filepath.Base(filepath.Dir(f)); !withLong[format] {
			t.Errorf("no loop or stall scenario of %s took a long line", format)
		}
	}
}

// sameLines checks the timeline of data against replay's report: the same
// report, trips on replay's lines, no entry past the last line.
func sameLines(t *testing.T, format string, data []byte) {
	t.Helper()
	tl, err := Stream(bytes.NewReader(data), Options{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := monitor.New(monitor.Options{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	want, err := monitor.Replay(eng, bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want.Lines != bytes.Count(data, []byte("\n")) {
		t.Fatalf("replay read %d lines of %d", want.Lines, bytes.Count(data, []byte("\n")))
	}
	if !reflect.DeepEqual(tl.Report, want) {
		t.Fatalf("explain's report\n%+v\nreplay's\n%+v", tl.Report, want)
	}
	trips := 0
	for _, e := range tl.Entries {
		if e.Line < 1 || e.Line > want.Lines {
			t.Errorf("an entry on line %d of %d", e.Line, want.Lines)
		}
		if e.Trip != nil {
			if trips >= len(want.Trips) || e.Trip.Line != want.Trips[trips].Line {
				t.Errorf("trip on line %d, replay's trips %+v", e.Trip.Line, want.Trips)
			}
			trips++
		}
	}
	if trips != len(want.Trips) {
		t.Errorf("%d trips shown, replay has %+v", trips, want.Trips)
	}
}

// longLine is a line of n bytes that is a JSON object of the stream's kind.
func longLine(n int) []byte {
	head, tail := `{"type":"assistant","text":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// withLine puts l after data's first line, with that line's kubectl
// timestamp when it has one.
func withLine(data, l []byte) []byte {
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var out bytes.Buffer
	out.Write(first)
	out.WriteByte('\n')
	if at, _ := monitor.LineTime(first); !at.IsZero() {
		out.Write(first[:bytes.IndexByte(first, ' ')+1])
	}
	out.Write(l)
	out.WriteByte('\n')
	out.Write(rest)
	return out.Bytes()
}
