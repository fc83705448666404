package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// TestRealRecordings replays the real CLIs' streams of testdata/real (see
// SOURCES.md there) with each scenario's guard and checks the verdict the
// scenario names, or a failure the CLI reported itself.
func TestRealRecordings(t *testing.T) {
	for _, f := range realRecordings(t) {
		format := filepath.Base(filepath.Dir(f))
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(format+"/"+name, func(t *testing.T) {
			sc, err := scriptedmodel.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			r := replayWith(t, f, format, scenarioGuards(t, sc))
			checkRealVerdict(t, sc, r)
		})
	}
}

func checkRealVerdict(t *testing.T, sc scriptedmodel.Scenario, r Report) {
	t.Helper()
	tripped := len(r.Trips) > 0
	if r.Unparsed > 1 || (r.Unparsed == 1 && !tripped && sc.Name != "stall") {
		t.Errorf("unparsed %d", r.Unparsed)
	}
	switch {
	case sc.Name == "stall":
		if r.Result {
			t.Errorf("a stream cut while the model stalled has a final result")
		}
	case sc.Name == "healthy", sc.Detector == DetectorSilentRun:
		if tripped || !r.Result || r.ResultError != "" {
			t.Errorf("want a successful turn: %+v", r)
		}
		if sc.Detector != "" && (len(r.Nudges) == 0 || r.Nudges[0].Detector != sc.Detector) {
			t.Errorf("nudges %+v, want %s", r.Nudges, sc.Detector)
		}
	case tripped:
		if r.Trips[0].Detector != sc.Detector || string(r.Trips[0].Class) != sc.Class {
			t.Errorf("trip %+v, want %s (%s)", r.Trips[0], sc.Detector, sc.Class)
		}
	default: // the CLI's own guard or its retries ended the turn
		if !r.Result || r.ResultError == "" {
			t.Errorf("no trip and no failure the CLI reported: %+v", r)
		}
	}
}

// scenarioGuards are the defaults with the guards a scenario needs.
func scenarioGuards(t *testing.T, sc scriptedmodel.Scenario) Guards {
	t.Helper()
	g, err := ParseGuards([]byte(sc.Guards))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// replayWith replays a recording with guards g.
func replayWith(t *testing.T, file, format string, g Guards) Report {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return replayOpts(t, data, Options{Format: format, Guards: g})
}

// realRecordings are the files of testdata/real (SOURCES.md there).
func realRecordings(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/real/*/*.jsonl")
	if err != nil || len(files) < 40 {
		t.Fatalf("recordings: %d, %v", len(files), err)
	}
	return files
}
