package explain

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func scenario(t *testing.T, format, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "test", "fakeagent", "scenarios", format, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// The recorded scenario streams of every format: the timeline agrees with
// the engine's report, numbers every call once, and marks the streak that
// tripped.
func TestScenarioTimelines(t *testing.T) {
	tests := []struct {
		format, scenario string
		detector         string // "" when nothing trips
		inTrip           int    // entries marked (the trip's own included)
		errors           int    // error answers shown
		gap              bool
		nudge            bool
	}{
		// The four identical calls; the trip is the fourth call's entry.
		{"claude", "identicalLoop", "identicalCalls", 4, 0, false, false},
		{"pi", "identicalLoop", "identicalCalls", 4, 0, false, false},
		// codex reports grep's exit status 1 (no match) as a failed command.
		{"codex", "identicalLoop", "identicalCalls", 4, 3, false, false},
		{"opencode", "identicalLoop", "identicalCalls", 4, 0, false, false},
		{"gemini", "identicalLoop", "identicalCalls", 4, 0, false, false},
		{"pi", "whitespace", "degeneration", 2, 0, false, false},
		{"claude", "whitespace", "degeneration", 2, 0, false, false},
		{"gemini", "whitespace", "degeneration", 2, 0, false, false},
		// The gap and the trip are one entry.
		{"claude", "stall", "stall", 1, 0, true, false},
		{"codex", "stall", "stall", 1, 0, true, false},
		{"pi", "lengthStop", "lengthStop", 1, 0, false, false},
		{"opencode", "lengthStop", "lengthStop", 1, 0, false, false},
		{"claude", "healthy", "", 0, 1, false, false},
		{"codex", "silentRun", "", 0, 0, false, true},
		{"opencode", "silentRun", "", 0, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.scenario, func(t *testing.T) {
			tl, err := Stream(scenario(t, tt.format, tt.scenario), Options{Format: tt.format})
			if err != nil {
				t.Fatal(err)
			}
			want := replay(t, tt.format, tt.scenario)
			if tl.Report.Steps != want.Steps || tl.Report.CostUSD != want.CostUSD || len(tl.Report.Trips) != len(want.Trips) {
				t.Fatalf("report %+v, the engine alone says %+v", tl.Report, want)
			}
			calls, marked, errs, gap, nudge := 0, 0, 0, false, false
			var trip *monitor.Trip
			for _, e := range tl.Entries {
				for _, c := range e.Calls {
					calls++
					if c.Step != calls {
						t.Errorf("line %d: call numbered #%d, want #%d", e.Line, c.Step, calls)
					}
					if c.Name == "" || c.Args == "" {
						t.Errorf("line %d: call #%d without a name or arguments: %+v", e.Line, c.Step, c)
					}
				}
				if e.InTrip {
					marked++
				}
				errs += len(e.Errors)
				gap = gap || e.GapSeconds > 0
				nudge = nudge || e.Nudge != ""
				if e.Trip != nil {
					trip = e.Trip
				}
			}
			if calls != tl.Report.Steps {
				t.Errorf("%d calls shown, the engine counted %d steps", calls, tl.Report.Steps)
			}
			switch {
			case tt.detector == "" && trip != nil:
				t.Errorf("a trip %+v where none was expected", trip)
			case tt.detector != "" && (trip == nil || trip.Detector != tt.detector || trip.Message != want.Trips[0].Message):
				t.Errorf("trip %+v, want %s as in %+v", trip, tt.detector, want.Trips)
			}
			if marked != tt.inTrip || errs != tt.errors || gap != tt.gap || nudge != tt.nudge {
				t.Errorf("marked %d, errors %d, gap %v, nudge %v; want %d, %d, %v, %v", marked, errs, gap, nudge,
					tt.inTrip, tt.errors, tt.gap, tt.nudge)
			}
		})
	}
}

// replay is the engine's own report, the reference.
func replay(t *testing.T, format, name string) monitor.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "test", "fakeagent", "scenarios", format, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := monitor.New(monitor.Options{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if v := eng.Feed(l, timeZero); v.Trip != nil {
			break
		}
	}
	eng.Finish()
	return eng.Report()
}

// Every real stream of the corpus explains without error, each call shown
// once, and the summary matches the engine's.
func TestCorpus(t *testing.T) {
	for _, dir := range []string{filepath.Join("..", "monitor", "testdata", "corpus")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*json*"))
		for _, f := range files {
			format := filepath.Base(filepath.Dir(f))
			t.Run(format+"/"+filepath.Base(f), func(t *testing.T) {
				r, err := os.Open(f)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				tl, err := Stream(r, Options{Format: format})
				if err != nil {
					t.Fatal(err)
				}
				calls := 0
				for _, e := range tl.Entries {
					calls += len(e.Calls)
				}
				if calls > tl.Report.Steps {
					t.Errorf("%d calls shown, more than the %d steps", calls, tl.Report.Steps)
				}
				var buf bytes.Buffer
				if err := tl.WriteText(&buf, false); err != nil || !strings.HasPrefix(buf.String(), "stream: "+format) {
					t.Errorf("text: %v\n%s", err, buf.String())
				}
			})
		}
	}
}

func TestTextColourOnlyWhenAsked(t *testing.T) {
	tl, err := Stream(scenario(t, "claude", "identicalLoop"), Options{Format: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	var plain, coloured bytes.Buffer
	_ = tl.WriteText(&plain, false)
	_ = tl.WriteText(&coloured, true)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("escape codes without colour")
	}
	if !strings.Contains(coloured.String(), "\x1b[") {
		t.Error("no escape codes with colour")
	}
	for _, want := range []string{"TRIPPED identicalCalls (runaway)", "repeated an identical tool call 4 times", ">>", "#4 Grep", "(identical x4)"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, plain.String())
		}
	}
}

func TestJSON(t *testing.T) {
	tl, err := Stream(scenario(t, "gemini", "stall"), Options{Format: "gemini"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	var back Timeline
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	last := back.Entries[len(back.Entries)-1]
	if last.Trip == nil || last.Trip.Detector != "stall" || last.GapSeconds < 600 || !last.InTrip {
		t.Errorf("last entry %+v, want the stall's gap with its trip", last)
	}
}

func TestShorten(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"{\n  \"a\":\n 1}", `{ "a": 1}`},
		{`{"pattern":"0123456789"}`, `{"pattern":"012…`},
	}
	for _, tt := range tests {
		if got := shorten(tt.in, 16); got != tt.want {
			t.Errorf("shorten(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

var timeZero = time.Time{}
