package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// apiStandIn stands in for the API server with the two calls the real
// sidecar binary makes on its Pod (ns/p): the agent container's log
// (follow, timestamps, sinceTime, as the kubelet serves it) and status
// patches, whose conditions it keeps across the sidecar's restarts.
type apiStandIn struct {
	t testing.TB

	mu      sync.Mutex
	cond    *sync.Cond
	lines   []string // the agent's log, timestamp prefix and newline included
	times   []time.Time
	exited  bool // the agent container terminated: a stream ends at the log's end
	conds   map[string]map[string]any
	patched int
}

// newAPIStandIn serves a stand-in until the test ends (after the sidecars
// it started: cleanups run last first).
func newAPIStandIn(t testing.TB) (*apiStandIn, *httptest.Server) {
	s := &apiStandIn{t: t, conds: map[string]map[string]any{}}
	s.cond = sync.NewCond(&s.mu)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

// write appends lines to the agent's log, stamped 1 ms apart from the
// last one (the first at the current second).
func (s *apiStandIn) write(lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Now().UTC().Truncate(time.Second)
	if n := len(s.times); n > 0 {
		at = s.times[n-1]
	}
	for _, l := range lines {
		at = at.Add(time.Millisecond)
		s.lines = append(s.lines, at.Format("2006-01-02T15:04:05.000000000Z07:00")+" "+l+"\n")
		s.times = append(s.times, at)
	}
	s.cond.Broadcast()
}

// exit marks the agent container terminated.
func (s *apiStandIn) exit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited = true
	s.cond.Broadcast()
}

// condition returns the Pod condition of type typ, if the sidecar wrote it.
func (s *apiStandIn) condition(typ string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.conds[typ]
	return c, ok
}

// waitFor waits until the sidecar wrote a condition of type typ.
func (s *apiStandIn) waitFor(typ string, within time.Duration) (map[string]any, bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c, ok := s.condition(typ); ok {
			return c, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, false
}

func (s *apiStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const pod = "/api/v1/namespaces/ns/pods/p/"
	switch {
	case r.Method == http.MethodPatch && r.URL.Path == pod+"status":
		s.patch(w, r)
	case r.Method == http.MethodGet && r.URL.Path == pod+"log":
		s.log(w, r)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// patch merges the patch's conditions (by type) and answers with the Pod.
func (s *apiStandIn) patch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Status struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.patched++
	for _, c := range body.Status.Conditions {
		if typ, _ := c["type"].(string); typ != "" {
			s.conds[typ] = c
		}
	}
	var conds []any
	for _, c := range s.conds {
		conds = append(conds, c)
	}
	state := map[string]any{"running": map[string]any{"startedAt": "2026-12-01T00:00:00Z"}}
	if s.exited {
		state = map[string]any{"terminated": map[string]any{"exitCode": 0}}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns"},
		"status": map[string]any{"conditions": conds,
			"containerStatuses": []any{map[string]any{"name": "agent", "state": state}}}})
}

// log serves the log from sinceTime on, following it until the agent
// terminated and every line went out.
func (s *apiStandIn) log(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("sinceTime"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	stop := context.AfterFunc(r.Context(), func() { // a sidecar gone ends the wait below
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer stop()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	for i := 0; ; i++ {
		s.mu.Lock()
		for i >= len(s.lines) && !s.exited && r.Context().Err() == nil {
			s.cond.Wait()
		}
		if i >= len(s.lines) || r.Context().Err() != nil {
			s.mu.Unlock()
			return
		}
		line, t := s.lines[i], s.times[i]
		s.mu.Unlock()
		if t.Before(since) {
			continue
		}
		if _, err := w.Write([]byte(line)); err != nil {
			return
		}
		f.Flush()
	}
}

// sidecarRun is one run of the real sidecar binary against a stand-in.
type sidecarRun struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan struct{}
}

// standInConfig is the kubeconfig and the env of `turnwatch-sidecar run`
// against srv, with its state in stateDir and nudges in nudgeDir.
type standInConfig struct {
	format, guards     string
	stateDir, nudgeDir string
	env                []string // more of it
}

// startSidecar runs bin as the sidecar of the stand-in's Pod.
func startSidecar(t testing.TB, bin string, srv *httptest.Server, c standInConfig) *sidecarRun {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--termination-log", "", "--drain", "100ms", "--write-grace", "1s")
	cmd.Env = append(os.Environ(), protocol.EnvFormat+"="+c.format, protocol.EnvGuards+"="+c.guards,
		protocol.EnvPodName+"=p", protocol.EnvPodNamespace+"=ns", protocol.EnvAgentContainer+"=agent",
		protocol.EnvStateDir+"="+c.stateDir, nudgefile.EnvDir+"="+c.nudgeDir)
	cmd.Env = append(cmd.Env, c.env...)
	run := &sidecarRun{cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = run.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(run.done)
	}()
	t.Cleanup(func() { run.stop() })
	return run
}

// stop ends the sidecar as the kubelet does (SIGTERM) and waits for it.
func (r *sidecarRun) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// buildSidecar builds the sidecar binary of this tree (with build tags, if
// any) into a temporary directory, turnwatch-hook beside it (where the
// sidecar finds the hook it installs).
func buildSidecar(t testing.TB, tags string) string {
	t.Helper()
	dir := t.TempDir()
	for _, pkg := range []string{".", "../turnwatch-hook"} {
		args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return filepath.Join(dir, "turnwatch-sidecar")
}
