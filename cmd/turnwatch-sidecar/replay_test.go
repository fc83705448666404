package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	corpus     = "../../pkg/monitor/testdata/corpus/"
	recordings = "../../pkg/monitor/testdata/real/"
)

// forgedTotal is the recorded claude stream real/claude/healthy.jsonl with
// its result's total_cost_usd replaced.
func forgedTotal(t *testing.T, total string) string {
	t.Helper()
	data, err := os.ReadFile(recordings + "claude/healthy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"total_cost_usd":[0-9.e-]+`).ReplaceAllString(string(data), `"total_cost_usd":`+total)
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	guards := filepath.Join(dir, "guards.json")
	os.WriteFile(guards, []byte(`{"identicalCalls":2,"worldTools":["Bash"]}`), 0o644)
	badGuards := filepath.Join(dir, "bad.json")
	os.WriteFile(badGuards, []byte(`{"stepBudget":"many"}`), 0o644)

	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	stamped := strings.Join([]string{
		t0.Format(time.RFC3339Nano) + ` {"type":"agent_start"}`,
		t0.Add(time.Minute).Format(time.RFC3339Nano) + ` {"type":"turn_start"}`,
		t0.Add(20*time.Minute).Format(time.RFC3339Nano) + ` {"type":"turn_start"}`,
	}, "\n")
	grep := `{"type":"assistant","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Grep","input":{"q":1}}]}}`
	var greps []string
	for i := 0; i < 3; i++ {
		greps = append(greps, strings.ReplaceAll(grep, "%d", string(rune('a'+i))))
	}

	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string // exact stdout, or an error fragment on stderr when code != 0
	}{
		{"corpus", []string{"replay", "--format", "claude", corpus + "claude/takopi_claude_stream_json_session.jsonl"}, "", 0,
			`{"format":"claude","lines":9,"steps":2,"costUSD":"0.013345","stopReason":"end","result":true,"trips":[],"nudges":[],"unparsed":0,"ignored":0,"resultError":"error_during_execution: Permission denied: cannot write to /root/secret.txt","agentSessionID":"aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa","deltasHidden":true}` + "\n"},
		{"the agent's own failure", []string{"replay", "--format", "claude", "-"},
			`{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"total_cost_usd":0.5}` + "\n", 0,
			`{"format":"claude","lines":1,"steps":0,"costUSD":"0.50","stopReason":"","result":true,"trips":[],"nudges":[],"unparsed":0,"ignored":0,"resultError":"error_max_turns","agentSessionID":""}` + "\n"},
		{"auto from stdin", []string{"replay", "-"}, `{"type":"step_start","part":{}}` + "\nnot json\n", 0,
			`{"format":"opencode","lines":2,"steps":0,"costUSD":"0.00","stopReason":"","result":false,"trips":[],"nudges":[],"unparsed":1,"ignored":0,"resultError":"","agentSessionID":""}` + "\n"},
		{"guards subset", []string{"replay", "--format", "claude", "--guards", guards, "-"}, strings.Join(greps, "\n"), 0,
			`{"format":"claude","lines":3,"steps":2,"costUSD":"0.00","stopReason":"","result":false,"trips":[{"class":"runaway","detector":"identicalCalls","message":"repeated an identical tool call 2 times","line":2}],"nudges":[],"unparsed":0,"ignored":0,"resultError":"","agentSessionID":""}` + "\n"},
		{"timestamps drive the clock", []string{"replay", "--format", "pi", "-"}, stamped, 0,
			`{"format":"pi","lines":3,"steps":0,"costUSD":"0.00","stopReason":"","result":false,"trips":[{"class":"stalled","detector":"stall","message":"no output for more than 10m0s while the model was generating","line":2}],"nudges":[],"unparsed":0,"ignored":0,"resultError":"","agentSessionID":""}` + "\n"},
		{"a wrong format says so", []string{"replay", "--format", "codex", recordings + "claude/identicalLoop.jsonl"}, "", 0,
			`{"format":"codex","lines":36,"steps":0,"costUSD":"0.00","stopReason":"","result":false,"trips":[],"nudges":[],"unparsed":36,"ignored":0,"resultError":"","agentSessionID":"","formatMismatch":"20 of 20 lines do not read as format codex; they read as claude: set spec.format to claude (or auto)","formatFit":"claude"}` + "\n"},
		{"a forged total is not counted", []string{"replay", "--format", "claude", "-"}, forgedTotal(t, "1e300"), 0,
			`{"format":"claude","lines":19,"steps":1,"costUSD":"0.0078","stopReason":"end","result":true,"trips":[],"nudges":[],"unparsed":0,"ignored":2,"resultError":"","agentSessionID":"94a8fab0-fe65-44c2-ae67-96419ec2dc6a","costMismatch":"line 19: a total cost of $9223372.036854775807 or more is more than 4 model messages can cost ($226.80): not counted"}` + "\n"},
		{"a lower total does not lower the cost", []string{"replay", "--format", "claude", "-"}, forgedTotal(t, "0"), 0,
			`{"format":"claude","lines":19,"steps":1,"costUSD":"0.0078","stopReason":"end","result":true,"trips":[],"nudges":[],"unparsed":0,"ignored":2,"resultError":"","agentSessionID":"94a8fab0-fe65-44c2-ae67-96419ec2dc6a","costMismatch":"line 19 reported $0.00 where $0.0078 was counted already: the turn keeps $0.0078"}` + "\n"},
		{"bad guards name the field", []string{"replay", "--guards", badGuards, "-"}, "", 2, "stepBudget"},
		{"bad format", []string{"replay", "--format", "vim", "-"}, "", 2, `format "vim"`},
		{"missing file", []string{"replay", filepath.Join(dir, "nope")}, "", 1, "no such file"},
		{"no file", []string{"replay"}, "", 2, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.stdin, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errs)
			}
			if tt.code == 0 && out != tt.out {
				t.Fatalf("stdout\n got %s\nwant %s", out, tt.out)
			}
			if tt.code != 0 && !strings.Contains(errs, tt.out) {
				t.Fatalf("stderr %q, want it to contain %q", errs, tt.out)
			}
		})
	}
}
