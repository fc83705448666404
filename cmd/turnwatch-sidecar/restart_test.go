package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/sidecar"
)

// crashWord is sidecar.CrashWord, which only a crashtest build defines.
const crashWord = "TURNWATCH-TEST-CRASH-HERE"

// A line that kills the sidecar (the crashtest build sends itself SIGKILL
// before feeding it, as the OOM killer would) is not fed again after the
// restart: the restarted sidecar counts it unparsed and watches the rest of
// the turn to its end. Without its state volume it dies on the line again,
// restart after restart (docs/design.md#bad-input).
func TestACrashingLineIsSkippedAfterTheRestart(t *testing.T) {
	bin := buildSidecar(t, "crashtest")
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5","tools":["Bash"]}`,
		assistantLine(0, bashCall("ls")), toolResult(0),
		assistantLine(1, bashCall("echo "+crashWord)), toolResult(1),
		assistantLine(2, bashCall("pwd")), toolResult(2),
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","total_cost_usd":0.01}`,
	}
	for _, withState := range []bool{true, false} {
		t.Run(fmt.Sprintf("state=%v", withState), func(t *testing.T) {
			srv, hs := newAPIStandIn(t)
			srv.write(lines...)
			srv.exit()
			cfg := standInConfig{format: "claude", guards: refusingGuards, nudgeDir: t.TempDir()}
			if withState {
				cfg.stateDir = t.TempDir()
			}
			first := startSidecar(t, bin, hs, cfg)
			if !killedOnTheLine(t, first) {
				t.Fatalf("the first sidecar was not killed on the line:\n%s", first.stderr)
			}
			second := startSidecar(t, bin, hs, cfg)
			if !withState {
				if !killedOnTheLine(t, second) {
					t.Errorf("without its state the restarted sidecar was not killed on the line again:\n%s", second.stderr)
				}
				return
			}
			c, ok := srv.waitFor(protocol.ConditionFinished, time.Minute)
			if !ok {
				t.Fatalf("the restarted sidecar reported no Finished:\n%s", second.stderr)
			}
			var s protocol.Summary
			if err := json.Unmarshal([]byte(c["message"].(string)), &s); err != nil {
				t.Fatal(err)
			}
			if s.Lines != len(lines) || s.Unparsed != 1 || s.Steps != 2 || !s.Result {
				t.Errorf("summary %+v: want %d lines, the crashing one unparsed, 2 steps, the result", s, len(lines))
			}
			if !strings.Contains(second.stderr.String(), "skipping the line the sidecar was reading when it ended") {
				t.Errorf("the restarted sidecar does not say it skipped the line:\n%s", second.stderr)
			}
		})
	}
}

// killedOnTheLine waits for the sidecar to end and says whether SIGKILL
// ended it.
func killedOnTheLine(t *testing.T, r *sidecarRun) bool {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatal("the sidecar did not end")
	}
	ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// A sidecar killed between two identical Gemini CLI calls and started again
// goes on counting where it stood: each call's verdict is keyed as the
// agent's hook keys it (the nth call with these arguments), so the real
// hook lets the first three through on their own lines and refuses the
// fourth, the tripping one. A sidecar that forgot its calls keyed the
// third "1" and the fourth "2": the hook found the fourth's refusal under
// the second's key.
func TestRefusalsSurviveARestart(t *testing.T) {
	bin := buildSidecar(t, "")
	lines := readLines(t, filepath.Join("..", "..", "pkg", "monitor", "testdata", "real", "gemini", "identicalLoop.jsonl"))
	if len(lines) != 9 {
		t.Fatalf("%d lines: want init, prompt, and four identical calls with three answers", len(lines))
	}
	srv, hs := newAPIStandIn(t)
	cfg := standInConfig{format: "gemini", guards: refusingGuards, stateDir: t.TempDir(), nudgeDir: t.TempDir()}
	srv.write(lines[:6]...) // two calls and their answers
	first := startSidecar(t, bin, hs, cfg)
	waitJudged(t, cfg.stateDir, 2)
	_ = first.cmd.Process.Kill()
	<-first.done

	srv.write(lines[6:]...) // the third call, its answer, the fourth
	second := startSidecar(t, bin, hs, cfg)
	if _, ok := srv.waitFor(protocol.ConditionTripped, time.Minute); !ok {
		t.Fatalf("no trip after the restart:\n%s", second.stderr)
	}
	if strings.Contains(second.stderr.String(), "skipping the line") {
		t.Errorf("a kill between two lines made the restarted sidecar skip one:\n%s", second.stderr)
	}
	hook := filepath.Join(filepath.Dir(bin), "turnwatch-hook")
	for n := 1; n <= 4; n++ {
		ev := `{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"cat /etc/os-release"}}`
		cmd := exec.Command(hook, "--cli", "gemini", "--dir", cfg.nudgeDir)
		cmd.Env = append(os.Environ(), nudgefile.EnvRefuseWait+"=300ms")
		cmd.Stdin = strings.NewReader(ev)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		refused := strings.Contains(string(out), `"decision":"deny"`)
		key := nudgefile.CallKey("run_shell_command", []byte(`{"command":"cat /etc/os-release"}`), n)
		verdicts, _ := os.ReadFile(filepath.Join(cfg.nudgeDir, nudgefile.VerdictFile))
		own, ok := nudgefile.FindVerdict(verdicts, "", key)
		if refused != (n == 4) || !ok || own.Call == nudgefile.CallAll || own.Refuse != (n == 4) || stderr.Len() > 0 {
			t.Errorf("call %d: hook said %q (stderr %q); its own line %+v %v\nverdicts:\n%s", n, out, stderr.String(), own, ok, verdicts)
		}
	}
}

// waitJudged waits until the sidecar's checkpoint holds n judged calls.
func waitJudged(t *testing.T, stateDir string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a checkpoint every 5 s
	for time.Now().Before(deadline) {
		var cp struct {
			Calls *sidecar.CallsState `json:"calls"`
		}
		if b, err := os.ReadFile(filepath.Join(stateDir, "checkpoint.json")); err == nil && json.Unmarshal(b, &cp) == nil &&
			cp.Calls != nil && len(cp.Calls.Judged) == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no checkpoint with %d judged calls", n)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func bashCall(command string) string {
	return `{"id":"toolu","input":{"command":"` + command + `"},"name":"Bash","type":"tool_use"}`
}

func toolResult(i int) string {
	return fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":"ok"}]},"session_id":"s"}`, i)
}
