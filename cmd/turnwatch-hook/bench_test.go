package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// BenchmarkHookPerCall is what the hook adds to each tool call of a healthy
// turn, as the CLI runs it (a process per event): the pre-tool hook that
// finds the sidecar's verdict already written (the stream showed the call
// before the CLI ran the hook: claude, gemini, pi), the post-tool hook with
// nothing to say, and, as the baseline measured in the same run, a process
// that does nothing (/bin/true). Each reports p50 and p99 in ms; compare
// them with benchstat, as ratios to the baseline.
func BenchmarkHookPerCall(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "turnwatch-hook")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("building the hook: %v\n%s", err, out)
	}
	dir := b.TempDir()
	var vs []nudgefile.Verdict
	for i := range 200 { // a long turn's verdicts so far
		vs = append(vs, nudgefile.Verdict{Call: "toolu_" + strings.Repeat("x", 20) + string(rune('A'+i%26)) + string(rune('a'+i/26))})
	}
	vs = append(vs, nudgefile.Verdict{Call: "toolu_now"})
	if err := nudgefile.AppendVerdicts(dir, vs); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), nudgefile.EnvDir+"="+dir, nudgefile.EnvRefuseWait+"=2s")
	cases := []struct {
		name  string
		argv  []string
		stdin string
	}{
		{"baseline", []string{"/bin/true"}, ""},
		{"pre", []string{bin, "--cli", "claude"}, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_now","tool_input":{"command":"ls"}}`},
		{"post", []string{bin, "--cli", "claude"}, `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_now"}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				cmd := exec.Command(c.argv[0], c.argv[1:]...)
				cmd.Env, cmd.Stdin = env, strings.NewReader(c.stdin)
				start := time.Now()
				if out, err := cmd.Output(); err != nil || strings.Contains(string(out), "deny") {
					b.Fatalf("%v: %q", err, out)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			q := func(p float64) float64 {
				return float64(took[min(len(took)-1, int(p*float64(len(took))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
		})
	}
}
