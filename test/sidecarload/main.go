// Command sidecarload measures the sidecar's CPU and memory off the node: it
// stands in for the API server (TLS, HTTP/2 and HTTP/1.1) with the two calls
// the sidecar makes, relays a child's stdout as the Pod's log the way the API
// server relays the kubelet's (one flushed write per line, each with its
// timestamp), runs `turnwatch-sidecar run` against it, and samples the
// sidecar from /proc (docs/performance.md, "Sidecar footprint"):
//
//	go build -o /tmp/sidecar ./cmd/turnwatch-sidecar && go build -o /tmp/fakeagent ./test/fakeagent
//	go run ./test/sidecarload -sidecar /tmp/sidecar -for 60s -- /tmp/fakeagent --rate 100 --for 70s
//
// With -drill SCENARIO the sidecar serves a drill's scripted model too, and
// sidecarload plays the scenario through it once, as an agent would (drill.go).
//
// With -flood the agent's whole output is logged before the sidecar starts,
// and sidecarload times how long the sidecar takes to read it all, as one
// backlog (flood.go):
//
//	go run ./test/sidecarload -sidecar /tmp/sidecar -flood -- cat /tmp/flood.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"turnwatch.dev/turnwatch/test/internal/proc"
)

func main() {
	sidecar := flag.String("sidecar", "turnwatch-sidecar", "the sidecar binary")
	d := flag.Duration("for", time.Minute, "how long to sample the sidecar (after a 3 s start)")
	drill := flag.String("drill", "", "serve this drill scenario and play it through once, as an agent would")
	flood := flag.Bool("flood", false, "log the agent's whole output first, then time the sidecar's read of it")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: sidecarload [-sidecar BIN] [-for D] -- AGENT ARGS...")
		os.Exit(2)
	}
	if err := run(*sidecar, *d, *drill, *flood, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "sidecarload:", err)
		os.Exit(1)
	}
}

func run(sidecar string, d time.Duration, drill string, flood bool, agent []string) error {
	dir, err := os.MkdirTemp("", "sidecarload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l := &agentLog{}
	l.cond = sync.NewCond(&l.mu)
	srv := httptest.NewUnstartedServer(l)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)), 0o600); err != nil {
		return err
	}
	if err := l.start(agent); err != nil {
		return err
	}
	if flood {
		l.flood = newFloodTimer()
		l.wait()
	}
	sc := exec.Command(sidecar, "run", "--kubeconfig", kubeconfig, "--termination-log", "")
	sc.Env = append(os.Environ(), "TURNWATCH_FORMAT=pi", `TURNWATCH_GUARDS={"stepBudget":0}`, "TURNWATCH_POD_NAME=p",
		"TURNWATCH_POD_NAMESPACE=ns", "TURNWATCH_AGENT_CONTAINER=agent", "TURNWATCH_STATE_DIR="+dir)
	port := 0
	if drill != "" {
		if port, err = freePort(); err != nil {
			return err
		}
		sc.Env = append(sc.Env, "TURNWATCH_DRILL_SCENARIO="+drill, fmt.Sprintf("TURNWATCH_MODEL_PORT=%d", port))
	}
	sc.Stderr = os.Stderr
	if err := sc.Start(); err != nil {
		return err
	}
	defer func() { _ = sc.Process.Kill(); _ = sc.Wait() }()
	if flood {
		if err := l.flood.report(sc.Process.Pid, d); err != nil {
			return err
		}
		return l.flood.summary(30 * time.Second)
	}
	time.Sleep(3 * time.Second)
	if drill != "" {
		go func() {
			n, err := playDrill(port)
			fmt.Printf("played %s through the model: %d requests (%v)\n", drill, n, err)
		}()
	}
	return sample(sc.Process.Pid, d)
}

// sample reports the process's CPU time and resident set over d.
func sample(pid int, d time.Duration) error {
	cpu0, at0 := proc.CPU(pid), time.Now()
	var sum, n, peak int64
	for time.Since(at0) < d {
		time.Sleep(2 * time.Second)
		rss, hwm, _ := proc.RSS(pid)
		sum, n, peak = sum+rss, n+1, max(peak, hwm)
	}
	cpu, wall := proc.CPU(pid)-cpu0, time.Since(at0)
	if cpu < 0 || n == 0 {
		return fmt.Errorf("the sidecar ended early")
	}
	anon, file := proc.RSSSplit(pid)
	fmt.Printf("sidecar over %s: CPU %.2f s = %.2f%% of a core; RSS mean %.1f MiB, peak %.1f MiB; at the end %.1f MiB anonymous, %.1f MiB file-backed\n",
		wall.Round(time.Second), cpu.Seconds(), 100*cpu.Seconds()/wall.Seconds(), float64(sum/n)/1024, float64(peak)/1024,
		float64(anon)/1024, float64(file)/1024)
	return nil
}

// agentLog is the agent container's log and the two API calls on its Pod.
type agentLog struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines [][]byte
	times []time.Time
	done  bool
	flood *floodTimer // with -flood
}

// wait returns once the agent's output ended.
func (l *agentLog) wait() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.done {
		l.cond.Wait()
	}
}

// start runs the agent and logs its stdout, line by line, with the time read.
func (l *agentLog) start(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			l.mu.Lock()
			if len(line) > 0 {
				l.lines, l.times = append(l.lines, line), append(l.times, time.Now().UTC())
			}
			l.done = err != nil
			l.cond.Broadcast()
			l.mu.Unlock()
			if err != nil {
				_ = cmd.Wait()
				return
			}
		}
	}()
	return nil
}

func (l *agentLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPatch {
		l.flood.patched(r)
		l.pod(w)
		return
	}
	if r.URL.Query().Get("follow") != "true" {
		l.head(w, r.URL.Query().Get("limitBytes"))
		return
	}
	var since time.Time
	if v := r.URL.Query().Get("sinceTime"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	timed := l.flood.request()
	for i := 0; ; i++ {
		l.mu.Lock()
		for i >= len(l.lines) && !l.done {
			l.cond.Wait()
		}
		if i >= len(l.lines) {
			l.mu.Unlock()
			return
		}
		line, t := l.lines[i], l.times[i]
		l.mu.Unlock()
		if t.Before(since) {
			continue
		}
		n, err := fmt.Fprintf(w, "%s %s", t.Format("2006-01-02T15:04:05.000000000Z07:00"), line)
		if err != nil {
			return
		}
		if timed {
			l.flood.wrote(n)
		}
		f.Flush() // as the kubelet does: one write per line
	}
}

// head answers a request without follow (the sidecar's look at the start
// of the log: docs/protocol.md): the log's first limitBytes.
func (l *agentLog) head(w http.ResponseWriter, limitBytes string) {
	limit, err := strconv.Atoi(limitBytes)
	if err != nil {
		limit = 1 << 20
	}
	w.Header().Set("Content-Type", "text/plain")
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.lines) && limit > 0; i++ {
		b := fmt.Appendf(nil, "%s %s", l.times[i].Format("2006-01-02T15:04:05.000000000Z07:00"), l.lines[i])
		b = b[:min(len(b), limit)]
		limit -= len(b)
		_, _ = w.Write(b)
	}
}

// pod answers a status patch with the Pod: the agent runs until its output ends.
func (l *agentLog) pod(w http.ResponseWriter) {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	state := map[string]any{"running": map[string]any{"startedAt": "2026-12-01T00:00:00Z"}}
	if done {
		state = map[string]any{"terminated": map[string]any{"exitCode": 0}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns"},
		"status":   map[string]any{"containerStatuses": []any{map[string]any{"name": "agent", "state": state}}}})
}
