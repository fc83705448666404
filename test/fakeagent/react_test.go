package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// sidecarWriter plays the sidecar in-process and synchronously: each line
// the agent prints is fed to the engine before the print returns, and each
// nudge is appended to the nudges file as the sidecar does. So the agent's
// next hook sees it, deterministically.
type sidecarWriter struct {
	t     *testing.T
	eng   *monitor.Engine
	dir   string
	out   bytes.Buffer
	trips []monitor.Trip
}

func (w *sidecarWriter) Write(p []byte) (int, error) {
	w.out.Write(p)
	v := w.eng.Feed(bytes.TrimRight(p, "\n"), time.Time{})
	first := w.eng.NudgeCount() - len(v.Nudges) + 1
	for i, n := range v.Nudges {
		rec := nudgefile.Record{Seq: first + i, Time: time.Now(), Detector: n.Detector, Message: n.Message, Line: n.Line,
			Warning: n.Detector != monitor.DetectorSilentRun}
		if err := nudgefile.Append(w.dir, rec); err != nil {
			w.t.Fatal(err)
		}
	}
	if v.Trip != nil {
		w.trips = append(w.trips, *v.Trip)
	}
	return len(p), nil
}

// The fake agent runs the real turnwatch-hook the way Claude Code runs a
// PostToolUse hook, and reacts to what it prints: warned, it changes course
// and finishes; stubborn, it trips at the next detection; silent, it speaks
// once nudged.
func TestReactToHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds turnwatch-hook")
	}
	bin := filepath.Join(t.TempDir(), "turnwatch-hook")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/turnwatch-hook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tests := []struct {
		mode      string
		wantTrip  bool
		wantSaid  string
		wantNudge string
	}{
		{"changes", false, "I was told: turnwatch warning (identicalCalls, line 9)", monitor.DetectorIdenticalCalls},
		{"stubborn", true, "", monitor.DetectorIdenticalCalls},
		{"silent", false, "I was told: turnwatch nudge (silentRun", monitor.DetectorSilentRun},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			dir := t.TempDir()
			settings := filepath.Join(dir, "settings.json")
			hookCmd := bin + " --cli claude --dir " + dir
			b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PostToolUse": []any{map[string]any{"matcher": "*",
				"hooks": []any{map[string]any{"type": "command", "command": hookCmd, "timeout": 10}}}}}})
			if err := os.WriteFile(settings, b, 0o644); err != nil {
				t.Fatal(err)
			}
			g := monitor.DefaultGuards()
			g.NudgeDelivery, g.WarnFirst = monitor.NudgeDeliveryFile, true
			eng, err := monitor.New(monitor.Options{Format: monitor.FormatClaude, Guards: g})
			if err != nil {
				t.Fatal(err)
			}
			w := &sidecarWriter{t: t, eng: eng, dir: dir}
			var errs bytes.Buffer
			if code := react([]string{"--react", tt.mode, "--settings", settings, "--every", "1ms", "--calls", "20"}, w, &errs); code != 0 {
				t.Fatalf("exit %d: %s", code, errs.String())
			}
			eng.Finish()
			rep := eng.Report()
			if (len(w.trips) > 0) != tt.wantTrip {
				t.Fatalf("trips %+v", w.trips)
			}
			if tt.wantTrip && (w.trips[0].Detector != monitor.DetectorIdenticalCalls || len(rep.Nudges) != 1) {
				t.Fatalf("trips %+v nudges %+v", w.trips, rep.Nudges)
			}
			if len(rep.Nudges) == 0 || rep.Nudges[0].Detector != tt.wantNudge {
				t.Fatalf("nudges %+v", rep.Nudges)
			}
			if !tt.wantTrip && (!rep.Result || !strings.Contains(w.out.String(), tt.wantSaid) || !strings.Contains(w.out.String(), "nudge latency ")) {
				t.Fatalf("result %v; the agent did not react as expected:\n%s", rep.Result, w.out.String())
			}
		})
	}
}
