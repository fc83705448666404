package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

func preHook(t *testing.T, dir, cli, stdin, wait string) (string, time.Duration) {
	t.Helper()
	var out, errs bytes.Buffer
	start := time.Now()
	run([]string{"--cli", cli, "--dir", dir}, strings.NewReader(stdin), &out, &errs, func(k string) string {
		if k == nudgefile.EnvRefuseWait {
			return wait
		}
		return ""
	})
	return out.String(), time.Since(start)
}

func writeVerdicts(t *testing.T, dir string, vs ...nudgefile.Verdict) {
	t.Helper()
	if err := nudgefile.AppendVerdicts(dir, vs); err != nil {
		t.Fatal(err)
	}
}

// The pre-tool hook refuses the call the sidecar refused, in each CLI's
// words, and ends its turn; lets through a call judged fine; past the wait
// lets the call run; with refusing off never waits nor refuses.
func TestHookRefuses(t *testing.T) {
	refused := nudgefile.Verdict{Call: "toolu_4", Refuse: true, Detector: "identicalCalls", Message: "repeated an identical tool call 4 times"}
	claudePre := func(id string) string {
		return `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"` + id + `","tool_input":{"command":"cat /etc/os-release"}}`
	}
	tests := []struct {
		name, cli, stdin, wait string
		verdicts               []nudgefile.Verdict
		want                   string // a substring of the answer; "" for no refusal
		slow                   bool   // waited the whole wait
	}{
		{"claude: refused", cliClaude, claudePre("toolu_4"), "2s", []nudgefile.Verdict{{Call: "toolu_3"}, refused},
			`"continue":false`, false},
		{"claude: judged fine", cliClaude, claudePre("toolu_3"), "2s", []nudgefile.Verdict{{Call: "toolu_3"}, refused}, "", false},
		{"claude: no verdict, fail open", cliClaude, claudePre("toolu_9"), "150ms", []nudgefile.Verdict{{Call: "toolu_3"}}, "", true},
		{"claude: refusing off", cliClaude, claudePre("toolu_4"), "", []nudgefile.Verdict{refused}, "", false},
		{"codex: Claude's words, no continue", cliCodex, claudePre("toolu_4"), "2s", []nudgefile.Verdict{refused}, `"permissionDecision":"deny"`, false},
		{"codex: never waits", cliCodex, claudePre("toolu_9"), "2s", nil, "", false},
		{"after a trip, any call", cliClaude, claudePre("toolu_7"), "2s",
			[]nudgefile.Verdict{{Call: nudgefile.CallAll, Refuse: true, Detector: "stall", Message: "no output for 10m"}}, "no output for 10m", false},
		{"adapter: refused", cliAdapter, `{"event":"pre","call":"toolu_4","tool":"bash"}`, "2s", []nudgefile.Verdict{refused}, `"refuse":true`, false},
		{"adapter nowait: no verdict yet, at once", cliAdapter, `{"event":"pre","nowait":true,"call":"toolu_9"}`, "2s", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if len(tt.verdicts) > 0 {
				writeVerdicts(t, dir, tt.verdicts...)
			}
			out, took := preHook(t, dir, tt.cli, tt.stdin, tt.wait)
			if tt.want == "" && strings.Contains(out, "refused") || tt.want != "" && !strings.Contains(out, tt.want) {
				t.Errorf("answer %q, want %q", out, tt.want)
			}
			if tt.want != "" {
				if acks, _ := os.ReadFile(filepath.Join(dir, nudgefile.AckFile)); !strings.Contains(string(acks), `"refused"`) {
					t.Errorf("the refusal is not acknowledged: %q", acks)
				}
			}
			if slow := took >= 150*time.Millisecond; slow != tt.slow {
				t.Errorf("took %v (want the whole wait: %v)", took, tt.slow)
			}
		})
	}
}

// Gemini CLI passes no call id: the hook names the call by tool, arguments
// and how many such calls it saw, as the sidecar does, so the 4th of four
// identical calls is the one refused.
func TestHookRefusesByKey(t *testing.T) {
	dir := t.TempDir()
	args := []byte(`{"command":"cat /etc/os-release"}`)
	var vs []nudgefile.Verdict
	for n := 1; n <= 4; n++ {
		v := nudgefile.Verdict{Call: "run_shell_command__" + string(rune('0'+n)), Key: nudgefile.CallKey("run_shell_command", args, n)}
		if n == 4 {
			v.Refuse, v.Detector, v.Message = true, "identicalCalls", "repeated an identical tool call 4 times"
		}
		vs = append(vs, v)
	}
	writeVerdicts(t, dir, vs...)
	ev, _ := json.Marshal(map[string]any{"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": json.RawMessage(" {\"command\": \"cat /etc/os-release\"}")})
	for n := 1; n <= 4; n++ {
		out, _ := preHook(t, dir, cliGemini, string(ev), "1s")
		if refused := strings.Contains(out, `"decision":"deny"`) && strings.Contains(out, `"continue":false`); refused != (n == 4) {
			t.Errorf("call %d: %q", n, out)
		}
	}
}

// The verdicts file grows with the turn's calls; the hook reads its end,
// where the newest call's line and the * line are: past 4 MiB of earlier
// verdicts a refusal still refuses, and a let-through still lets through
// without waiting (for a refuseWait long enough that a wait is plain on a
// busy machine).
func TestHookReadsTheVerdictsEnd(t *testing.T) {
	dir := t.TempDir()
	var early []nudgefile.Verdict
	for i := range 60000 { // about 5 MiB
		early = append(early, nudgefile.Verdict{Call: fmt.Sprintf("toolu_%060d", i), Key: fmt.Sprintf("Bash %016x 1", i)})
	}
	writeVerdicts(t, dir, early...)
	writeVerdicts(t, dir, nudgefile.Verdict{Call: "toolu_ok"},
		nudgefile.Verdict{Call: "toolu_4", Refuse: true, Detector: "identicalCalls", Message: "repeated an identical tool call 4 times"})
	if fi, _ := os.Stat(filepath.Join(dir, nudgefile.VerdictFile)); fi.Size() <= maxRead {
		t.Fatalf("the file is %d bytes: not past maxRead", fi.Size())
	}
	pre := func(id string) string {
		return `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"` + id + `","tool_input":{"command":"ls"}}`
	}
	if out, took := preHook(t, dir, cliClaude, pre("toolu_4"), "30s"); !strings.Contains(out, `"permissionDecision":"deny"`) || took > 15*time.Second {
		t.Errorf("the refused call: %q after %v", out, took)
	}
	if out, took := preHook(t, dir, cliClaude, pre("toolu_ok"), "30s"); strings.Contains(out, "deny") || took > 15*time.Second {
		t.Errorf("the call let through: %q after %v", out, took)
	}
}

// A Gemini CLI call of many megabytes is named by the hook as the sidecar
// names it, so its own verdict reaches it: the hook reads as much of an
// event as the sidecar reads of a line.
func TestHookNamesABigCall(t *testing.T) {
	dir := t.TempDir()
	const unit = `\tif a < b {\n\t\tx(\"y\")\n\t}\n`
	args := []byte(`{"file_path":"/w/big.go","content":"` + strings.Repeat(unit, 12<<20/len(unit)) + `"}`)
	writeVerdicts(t, dir, nudgefile.Verdict{Call: "write_file_1", Key: nudgefile.CallKey("write_file", args, 1),
		Refuse: true, Detector: "identicalCalls", Message: "repeated an identical tool call 4 times"})
	ev := `{"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":` + string(args) + `}` // as Node writes it: < unescaped
	out, took := preHook(t, dir, cliGemini, ev, "30s")
	if !strings.Contains(out, `"decision":"deny"`) || took > 15*time.Second {
		t.Errorf("a call of %d bytes: %q after %v", len(args), out, took)
	}
}
