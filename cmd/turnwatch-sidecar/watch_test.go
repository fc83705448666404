package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// loopScript prints a looping claude stream of identical grep calls, one
// call and its result per iteration, like the reviewer of
// docs/design.md#the-reviewer-that-never-stopped.
const loopScript = `i=0
while :; do
  i=$((i+1))
  echo "{\"type\":\"assistant\",\"message\":{\"id\":\"m$i\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t$i\",\"name\":\"Grep\",\"input\":{\"pattern\":\"TODO\"}}],\"stop_reason\":\"tool_use\"}}"
  echo "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t$i\",\"content\":\"\"}]}}"
  sleep 0.02
done`

func trips(t *testing.T, stderr string) []monitor.Trip {
	t.Helper()
	var out []monitor.Trip
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, `{"class"`) {
			continue
		}
		var tr monitor.Trip
		if err := json.Unmarshal([]byte(l), &tr); err != nil {
			t.Fatalf("stderr line %q: %v", l, err)
		}
		out = append(out, tr)
	}
	return out
}

func TestWatchStopsLoopingChild(t *testing.T) {
	start := time.Now()
	code, out, errs := run(t, "", "watch", "--format", "claude", "--grace", "5s", "--", "sh", "-c", loopScript)
	if code != exitTripped {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitTripped, errs)
	}
	tr := trips(t, errs)
	if len(tr) != 1 || tr[0].Detector != monitor.DetectorIdenticalCalls || tr[0].Class != monitor.ClassRunaway || tr[0].Line != 7 {
		t.Fatalf("trips %+v, want identicalCalls at line 7", tr)
	}
	// stdout is passed through unchanged: whole lines, as printed.
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 7 || !strings.Contains(lines[6], `"id":"m4"`) {
		t.Fatalf("stdout %q", out)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("SIGTERM should have stopped sh at once, took %v", time.Since(start))
	}
}

func TestWatchStallFromTheClock(t *testing.T) {
	guards := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(guards, []byte(`{"stallTimeout":"500ms"}`), 0o644)
	start := time.Now()
	code, out, errs := run(t, "", "watch", "--format", "pi", "--guards", guards, "--tick", "50ms", "--",
		"sh", "-c", `echo '{"type":"agent_start"}'; sleep 30`)
	if code != exitTripped || out != `{"type":"agent_start"}`+"\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errs)
	}
	tr := trips(t, errs)
	if len(tr) != 1 || tr[0].Detector != monitor.DetectorStall || tr[0].Line != 1 {
		t.Fatalf("trips %+v", tr)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 10*time.Second {
		t.Fatalf("stalled after %v", d)
	}
}

// A child that ignores SIGTERM is killed after the grace period.
func TestWatchKillsAfterGrace(t *testing.T) {
	start := time.Now()
	code, _, errs := run(t, "", "watch", "--format", "claude", "--grace", "700ms", "--",
		"sh", "-c", "trap '' TERM; "+loopScript)
	d := time.Since(start)
	if code != exitTripped || len(trips(t, errs)) != 1 {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
	if d < 700*time.Millisecond || d > 10*time.Second {
		t.Fatalf("took %v, want the grace period then SIGKILL", d)
	}
}

// A child that finishes on its own: stdout byte for byte, its exit code,
// nudges on stderr, and the length stop judged at the end.
func TestWatchChildFinishes(t *testing.T) {
	text := `{"type":"step_start","part":{}}` + "\n" + "not json \x00\n" + `{"type":"step_finish","part":{"reason":"stop","cost":0.1}}` + "\nno newline at the end"
	code, out, errs := run(t, text, "watch", "--", "sh", "-c", `cat; exit 5`)
	if code != 5 || out != text || errs != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errs)
	}
	code, _, errs = run(t, "", "watch", "--format", "opencode", "--", "sh", "-c",
		`echo '{"type":"step_start","part":{}}'; echo '{"type":"step_finish","part":{"reason":"length"}}'`)
	if tr := trips(t, errs); code != exitTripped || len(tr) != 1 || tr[0].Class != monitor.ClassLength || tr[0].Line != 2 {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
	var b strings.Builder
	for i := 0; i < 13; i++ {
		b.WriteString(`echo '{"type":"tool_execution_start","toolCallId":"c` + string(rune('a'+i)) + `","toolName":"bash","args":{"n":` + string(rune('0'+i%10)) + `}}'; `)
		b.WriteString(`echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"d` + string(rune('a'+i)) + `","name":"bash","arguments":{"i":"` + string(rune('a'+i)) + `"}}],"stopReason":"toolUse"}}'; `)
	}
	code, _, errs = run(t, "", "watch", "--format", "pi", "--", "sh", "-c", b.String())
	if code != 0 || !strings.Contains(errs, `{"nudge":{"detector":"silentRun","message":"13 tool-only model messages`) {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

func TestWatchUsage(t *testing.T) {
	if code, _, errs := run(t, "", "watch", "--format", "pi"); code != 2 || !strings.Contains(errs, "usage") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
	if code, _, _ := run(t, "", "watch", "--", "/nonexistent/agent"); code != 127 {
		t.Fatalf("exit %d, want 127", code)
	}
}
