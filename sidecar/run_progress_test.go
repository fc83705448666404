package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// runStatusServer plays the API server's agentruns/status endpoint: it
// records each merge patch, and refuses with answer when set.
type runStatusServer struct {
	mu      sync.Mutex
	paths   []string
	types   []string
	bodies  []map[string]any
	answer  int
	refusal string
}

func (s *runStatusServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	s.paths, s.types, s.bodies = append(s.paths, r.Method+" "+r.URL.Path), append(s.types, r.Header.Get("Content-Type")), append(s.bodies, body)
	if s.answer != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.answer)
		_, _ = io.WriteString(w, s.refusal)
		return
	}
	_, _ = io.WriteString(w, `{"kind":"AgentRun"}`)
}

// Progress goes to the run's status, one merge patch per period that moved:
// the run's totals (earlier turns + this one) and this turn's own counts.
// The Pod is not written.
func TestProgressToRun(t *testing.T) {
	srv := &runStatusServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	pod := &podPatcher{t: t}
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r := newTestReporter(t, pod, c)
	cfg := Options{RunName: "fix", RunUID: "uid-fix", PodName: "fix-1", Namespace: "team", PriorSteps: 3, PriorCostUSD: "0.10"}
	r.run = runProgressOf(cfg, mustKubeClient(&rest.Config{Host: ts.URL}))
	ctx := context.Background()

	steps := []struct {
		advance time.Duration
		p       protocol.Progress
		writes  int
	}{
		{0, counts(1, "0.02"), 0},                // the first report waits a period too
		{15 * time.Second, counts(2, "0.05"), 1}, // the period passed
		{time.Second, counts(4, "0.07"), 1},      // within the period: held
		{15 * time.Second, counts(4, "0.07"), 2}, // the period passed: the newest
		{15 * time.Second, counts(4, "0.07"), 2}, // nothing moved: nothing written
	}
	for i, s := range steps {
		c.Step(s.advance)
		r.progress(ctx, s.p)
		if len(srv.bodies) != s.writes {
			t.Fatalf("step %d: %d writes, want %d", i, len(srv.bodies), s.writes)
		}
	}
	if pod.writes != 0 {
		t.Errorf("the Pod was written %d times: %v", pod.writes, pod.bodies)
	}
	if srv.paths[0] != "PATCH /apis/turnwatch.dev/v1alpha1/namespaces/team/agentruns/fix/status" || srv.types[0] != "application/merge-patch+json" {
		t.Errorf("request %s (%s)", srv.paths[0], srv.types[0])
	}
	got, _ := json.Marshal(srv.bodies[1])
	want := `{"status":{"costUSD":"0.17","progress":{"costUSD":"0.07","runUID":"uid-fix","steps":4,"time":"2026-03-01T10:00:31Z","turn":"fix-1"},"steps":7}}`
	if string(got) != want {
		t.Errorf("patch\n%s\nwant\n%s", got, want)
	}
}

// A refused report (the policy: a restarted sidecar behind its
// predecessor, or a run that finished) is not retried at once: the next
// period carries newer counts, and the first of them the run takes.
func TestProgressToRunRefused(t *testing.T) {
	srv := &runStatusServer{answer: http.StatusForbidden,
		refusal: `{"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":"never go down"}`}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r := newTestReporter(t, &podPatcher{t: t}, c)
	r.run = runProgressOf(Options{RunName: "fix", PodName: "fix-0", Namespace: "team"}, mustKubeClient(&rest.Config{Host: ts.URL}))
	ctx := context.Background()
	c.Step(15 * time.Second) // the first report waits a period
	r.progress(ctx, counts(1, "0"))
	c.Step(time.Second)
	r.progress(ctx, counts(2, "0"))
	if len(srv.bodies) != 1 {
		t.Fatalf("%d requests within the period, want 1", len(srv.bodies))
	}
	srv.answer = 0
	c.Step(15 * time.Second)
	r.progress(ctx, counts(2, "0"))
	if len(srv.bodies) != 2 || r.run.last.Steps != 2 {
		t.Fatalf("%d requests, last taken %+v", len(srv.bodies), r.run.last)
	}
}

// Without a run name (a sidecar run by hand, or an older manager) progress
// stays on the Pod.
func TestRunProgressOfNoRun(t *testing.T) {
	if runProgressOf(Options{PodName: "p"}, nil) != nil {
		t.Fatal("a run writer without a run name")
	}
}

// The lag rides on the progress reports: written with the counts, and on
// its own when it moves to another whole second while the counts stand
// still (a sidecar falling behind a flood of text that counts no step).
func TestProgressToRunLag(t *testing.T) {
	srv := &runStatusServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r := newTestReporter(t, &podPatcher{t: t}, c)
	r.run = runProgressOf(Options{RunName: "fix", RunUID: "u", PodName: "fix-0", Namespace: "team"}, mustKubeClient(&rest.Config{Host: ts.URL}))
	ctx := context.Background()
	for i, s := range []struct {
		lag    time.Duration // of the line read just before the report; -1 for none
		p      protocol.Progress
		writes int
		want   any // the last report's progress.lag
	}{
		{-1, counts(0, "0"), 0, nil}, // no line, no count: nothing to tell
		{-1, counts(1, "0"), 1, nil}, // counts moved; no lag known yet
		{40 * time.Millisecond, counts(1, "0"), 2, "40ms"},
		{300 * time.Millisecond, counts(1, "0"), 2, "40ms"},  // the same whole second: held
		{3500 * time.Millisecond, counts(1, "0"), 3, "3.5s"}, // behind by seconds: told without a step
		{3900 * time.Millisecond, counts(2, "0"), 4, "3.9s"}, // with the counts
		{2 * time.Second, counts(1, "0"), 4, "3.9s"},         // counts behind: never
	} {
		c.Step(15 * time.Second)
		if s.lag >= 0 {
			r.readLag(c.Now().Add(-s.lag), c.Now())
		}
		r.progress(ctx, s.p)
		if len(srv.bodies) != s.writes {
			t.Fatalf("step %d: %d writes, want %d", i, len(srv.bodies), s.writes)
		}
		if s.writes == 0 {
			continue
		}
		progress := srv.bodies[len(srv.bodies)-1]["status"].(map[string]any)["progress"].(map[string]any)
		if got := progress["lag"]; got != s.want {
			t.Errorf("step %d: lag %v, want %v", i, got, s.want)
		}
	}
}
