//go:build !turnwatch_nodrill

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
)

func TestGatewayFlags(t *testing.T) {
	for _, tc := range []struct {
		f    gatewayFlags
		want string // in the error; "" for none
	}{
		{gatewayFlags{listen: "127.0.0.1:0", format: "claude", scenario: "healthy"}, ""},
		{gatewayFlags{listen: "127.0.0.1:0", format: "codex", upstream: "https://api.example"}, ""},
		{gatewayFlags{listen: "127.0.0.1:0", format: "nope", scenario: "healthy"}, "--format"},
		{gatewayFlags{listen: "0.0.0.0:80", format: "claude", scenario: "healthy"}, "loopback"},
		{gatewayFlags{listen: "127.0.0.1:0", format: "claude"}, "is required"},
		{gatewayFlags{listen: "127.0.0.1:0", format: "claude", scenario: "healthy", upstream: "http://x"}, "not both"},
		{gatewayFlags{listen: "127.0.0.1:0", format: "claude", scenario: "nope"}, "nope"},
		{gatewayFlags{listen: "127.0.0.1:0", format: "claude", scenario: "healthy", keyFile: "/nonexistent/key"}, "--key-file"},
	} {
		_, c, err := tc.f.options(io.Discard)
		if c != nil {
			c.Close()
		}
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
}

// gatewayRun is a running `turnwatch-sidecar gateway`.
type gatewayRun struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (r *gatewayRun) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.Write(p)
}

func (r *gatewayRun) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// waitLog waits a few seconds for sub in the process's stderr (written
// after the answer's last byte was sent).
func (r *gatewayRun) waitLog(sub string) bool {
	for range 500 {
		if strings.Contains(r.log(), sub) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// startGateway runs bin's gateway subcommand with args and reads its URL.
func startGateway(t testing.TB, bin string, env []string, args ...string) *gatewayRun {
	t.Helper()
	r := &gatewayRun{cmd: exec.Command(bin, append([]string{"gateway"}, args...)...)}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = r
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v\n%s", err, r.log())
	}
	r.url = strings.TrimSpace(line)
	return r
}

const anthropicStep1 = `{"model":"m","stream":true,"messages":[{"role":"user","content":"do it"},
	{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ANSWER"}]}],
	"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`

// TestGatewayServes runs the real binary in scripted mode: it serves a
// model request with the key, logs its end as a JSON line, refuses the
// next as a spent budget in the API's shape, and ends at SIGTERM.
func TestGatewayServes(t *testing.T) {
	bin := buildSidecar(t, "")
	dir := t.TempDir()
	const key = "sk-real-in-a-file-51d0"
	keyFile, modelLog := filepath.Join(dir, "key"), filepath.Join(dir, "model.jsonl")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	r := startGateway(t, bin, nil, "--format", "claude", "--scenario", "healthy", "--key-file", keyFile,
		"--token", "placeholder", "--log", modelLog, "--refuse-after", "1")
	post := func() (int, string) {
		req, _ := http.NewRequest("POST", r.url+"/v1/messages", strings.NewReader(anthropicStep1))
		req.Header.Set("X-Api-Key", "placeholder")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != 200 || !strings.Contains(body, "message_stop") {
		t.Fatalf("answered %d %s", code, body)
	}
	code, body := post()
	claude, _ := agents.Lookup("claude")
	if code != claude.Refusal || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "kubectl describe agentturn") {
		t.Errorf("the second request: %d %s", code, body)
	}
	r.waitLog(`"end":true`)
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, r.log())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit at SIGINT")
	}
	var end struct {
		End   bool
		Model string
		Usage struct{ Input, Output int64 }
		Stop  string
	}
	first, _, _ := strings.Cut(r.log(), "\n")
	if err := json.Unmarshal([]byte(first), &end); err != nil || !end.End || end.Model != "m" || end.Usage.Input != 1100 || end.Usage.Output != 50 || end.Stop != "end" {
		t.Errorf("the first stderr line %q: %+v %v", first, end, err)
	}
	if !strings.Contains(r.log(), `"reason"="budget"`) && !strings.Contains(r.log(), `"reason":"budget"`) {
		t.Errorf("the refusal is not logged:\n%s", r.log())
	}
	logged, _ := os.ReadFile(modelLog)
	if n := bytes.Count(logged, []byte("\n")); n != 1 {
		t.Errorf("the model got %d requests, want the first only:\n%s", n, logged)
	}
	if strings.Contains(r.log(), key) || bytes.Contains(logged, []byte(key)) {
		t.Errorf("the key is in a log")
	}
}
