package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

func hook(t *testing.T, dir, cli, stdin string) (string, int) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run([]string{"--cli", cli, "--dir", dir}, strings.NewReader(stdin), &out, &errs, func(string) string { return "" })
	return out.String(), code
}

func appendNudge(t *testing.T, dir string, seq int, detector string, warning bool) {
	t.Helper()
	r := nudgefile.Record{Seq: seq, Time: time.Now(), Detector: detector, Message: "change course", Line: seq, Warning: warning}
	if err := nudgefile.Append(dir, r); err != nil {
		t.Fatal(err)
	}
}

// Each CLI gets the shape its hook protocol documents, each nudge once.
func TestHookShapes(t *testing.T) {
	tests := []struct {
		cli, stdin string
		check      func(t *testing.T, out string)
		empty      string // output when nothing is new
	}{
		{cliClaude, `{"hook_event_name":"PostToolUse","tool_name":"Bash"}`, func(t *testing.T, out string) {
			var v struct {
				H struct {
					Event   string `json:"hookEventName"`
					Context string `json:"additionalContext"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || v.H.Event != "PostToolUse" ||
				v.H.Context != "turnwatch warning (identicalCalls, line 1): change course" {
				t.Fatalf("%q %v", out, err)
			}
		}, ""},
		{cliGemini, `{"hook_event_name":"AfterTool","tool_name":"run_shell_command"}`, func(t *testing.T, out string) {
			var v struct {
				H map[string]string `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || v.H["additionalContext"] != "turnwatch warning (identicalCalls, line 1): change course" || len(v.H) != 1 {
				t.Fatalf("%q %v", out, err)
			}
		}, "{}\n"},
		{cliPlain, "", func(t *testing.T, out string) {
			if out != "turnwatch warning (identicalCalls, line 1): change course\n" {
				t.Fatalf("%q", out)
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.cli, func(t *testing.T) {
			dir := t.TempDir()
			if out, code := hook(t, dir, tt.cli, tt.stdin); code != 0 || out != tt.empty {
				t.Fatalf("no file: %q %d", out, code)
			}
			appendNudge(t, dir, 1, "identicalCalls", true)
			out, code := hook(t, dir, tt.cli, tt.stdin)
			if code != 0 {
				t.Fatal(code)
			}
			tt.check(t, out)
			if out, _ := hook(t, dir, tt.cli, tt.stdin); out != tt.empty {
				t.Fatalf("shown twice: %q", out)
			}
		})
	}
}

// A Claude event that cannot carry context is answered as PostToolUse.
func TestHookClaudeEvent(t *testing.T) {
	dir := t.TempDir()
	appendNudge(t, dir, 1, "silentRun", false)
	out, _ := hook(t, dir, cliClaude, `{"hook_event_name":"UserPromptSubmit"}`)
	if !strings.Contains(out, `"hookEventName":"UserPromptSubmit"`) {
		t.Fatal(out)
	}
	appendNudge(t, dir, 2, "silentRun", false)
	out, _ = hook(t, dir, cliClaude, `junk`)
	if !strings.Contains(out, `"hookEventName":"PostToolUse"`) || !strings.Contains(out, "turnwatch nudge (silentRun, line 2)") {
		t.Fatal(out)
	}
}

// Whatever the agent did to the nudges file or the hook's state, the hook
// exits 0 and the nudges the sidecar writes afterwards are shown.
func TestHookSurvivesBadFiles(t *testing.T) {
	tests := []struct {
		name string
		harm func(t *testing.T, dir string)
	}{
		{"truncated", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, nudgefile.File), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewritten with junk and a huge number", func(t *testing.T, dir string) {
			junk := "\x00\x01garbage\n{\"seq\":99999,\"detector\":\"x\",\"message\":\"fake\"}\n{\"seq\":"
			if err := os.WriteFile(filepath.Join(dir, nudgefile.File), []byte(junk), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a fifo", func(t *testing.T, dir string) {
			p := filepath.Join(dir, nudgefile.File)
			_ = os.Remove(p)
			if err := syscall.Mkfifo(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"state is junk", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, stateFile), []byte("{{{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			appendNudge(t, dir, 1, "silentRun", false)
			if out, _ := hook(t, dir, cliPlain, ""); !strings.Contains(out, "silentRun") {
				t.Fatalf("first: %q", out)
			}
			tt.harm(t, dir)
			if _, code := hook(t, dir, cliPlain, ""); code != 0 {
				t.Fatalf("exit %d", code)
			}
			appendNudge(t, dir, 2, "identicalCalls", true) // the sidecar's next nudge
			out, code := hook(t, dir, cliPlain, "")
			if code != 0 || !strings.Contains(out, "turnwatch warning (identicalCalls, line 2)") {
				t.Fatalf("later nudge not shown: %q %d", out, code)
			}
		})
	}
}

func TestHookUsage(t *testing.T) {
	if _, code := hook(t, t.TempDir(), "vim", ""); code != 2 {
		t.Fatal(code)
	}
}

// --block adds the decision/reason pair older Claude Code versions read.
func TestHookClaudeBlock(t *testing.T) {
	dir := t.TempDir()
	appendNudge(t, dir, 1, "identicalCalls", true)
	var out, errs bytes.Buffer
	run([]string{"--cli", "claude", "--block", "--dir", dir}, strings.NewReader(`{"hook_event_name":"PostToolUse"}`), &out, &errs, func(string) string { return "" })
	var v struct {
		Decision, Reason string
		H                map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Decision != "block" || v.Reason == "" || v.Reason != v.H["additionalContext"] {
		t.Fatalf("%q %v", out.String(), err)
	}
}

// failWriter is a CLI that closed the hook's stdout.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// The hook acknowledges that it ran (once) and each nudge it handed over;
// a nudge it could not hand over is not acknowledged, and is shown again.
func TestHookAcknowledges(t *testing.T) {
	dir := t.TempDir()
	if _, code := hook(t, dir, cliClaude, `{"hook_event_name":"PostToolUse"}`); code != 0 {
		t.Fatal(code)
	}
	acks, err := nudgefile.ReadAcks(dir)
	if err != nil || !acks.Ran || acks.Delivered(1) {
		t.Fatalf("after a run with nothing to say: %+v %v", acks, err)
	}
	appendNudge(t, dir, 1, "silentRun", false)
	var errs bytes.Buffer
	run([]string{"--cli", cliClaude, "--dir", dir}, strings.NewReader(`{}`), failWriter{}, &errs, func(string) string { return "" })
	if acks, _ := nudgefile.ReadAcks(dir); acks.Delivered(1) {
		t.Fatalf("a nudge the CLI never got is acknowledged")
	}
	if out, _ := hook(t, dir, cliClaude, `{"hook_event_name":"PostToolUse"}`); !strings.Contains(out, "change course") {
		t.Fatalf("not shown: %q", out)
	}
	hook(t, dir, cliClaude, `{"hook_event_name":"PostToolUse"}`)
	b, _ := os.ReadFile(filepath.Join(dir, nudgefile.AckFile))
	if acks := nudgefile.ParseAcks(b); !acks.Ran || !acks.Delivered(1) || strings.Count(string(b), `"seq":0`) != 1 || strings.Count(string(b), `"seq":1`) != 1 {
		t.Fatalf("acks file %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, nudgefile.AckFile)); fi.Mode().Perm() != 0o644 {
		t.Errorf("acks file mode %v, want 0644 (the sidecar's user reads it)", fi.Mode())
	}
}

// Every CLI's hook protocol (agents.CLIs) is one --cli accepts, with an
// answer of its own: a protocol without its case in render and
// renderRefusal would answer as plain, which its CLI cannot read.
func TestEveryCLIHasItsProtocol(t *testing.T) {
	recs := []nudgefile.Record{{Seq: 1, Detector: "silentRun", Message: "change course", Line: 1}}
	v := nudgefile.Verdict{Detector: "identicalCalls", Message: "stop"}
	for _, c := range agents.CLIs {
		if !slices.Contains(clis, c.Hook) {
			t.Errorf("%s: hook protocol %q is not one of --cli's %v", c.Format, c.Hook, clis)
			continue
		}
		if bytes.Equal(render(c.Hook, "PostToolUse", recs, false), render(cliPlain, "PostToolUse", recs, false)) {
			t.Errorf("%s: render answers %s as plain", c.Format, c.Hook)
		}
		if bytes.Equal(renderRefusal(c.Hook, v), renderRefusal(cliPlain, v)) {
			t.Errorf("%s: renderRefusal answers %s as plain", c.Format, c.Hook)
		}
	}
}
