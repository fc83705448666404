package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// halfOpenLogServer serves a log whose connections go quiet without
// closing: connection i sends the first send[i] lines at or after sinceTime
// (all of them once send is used up) and then holds the connection open,
// sending nothing, until the client goes away. That is a stream left half
// open: the lines after it exist, only a new connection brings them.
type halfOpenLogServer struct {
	t       testing.TB
	entries []logEntry
	send    []int

	mu    sync.Mutex
	conns int
}

func (s *halfOpenLogServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("follow") != "true" {
		// The lagging sidecar's look at the log's start
		// (follow_rotation.go): the log was never rotated.
		fmt.Fprintf(w, "%s %s\n", s.entries[0].ts.Format(kubeletTimeFormat), s.entries[0].text)
		return
	}
	var since time.Time
	if v := r.URL.Query().Get("sinceTime"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	s.mu.Lock()
	i := s.conns
	s.conns++
	s.mu.Unlock()
	n := len(s.entries)
	if i < len(s.send) {
		n = s.send[i]
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	for _, e := range s.entries {
		if n == 0 {
			break
		}
		if e.ts.Before(since) {
			continue
		}
		fmt.Fprintf(w, "%s %s\n", e.ts.Format(kubeletTimeFormat), e.text)
		n--
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done() // half open: nothing more, nothing closed
}

func (s *halfOpenLogServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// A stream that goes quiet while the log grows does not trip the stall: the
// sidecar reopens the stream first and reads on. A silence the reopened
// stream confirms trips, at the last line before the gap.
func TestHalfOpenStreamIsNoStall(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	call := claudeToolCall(1, "ls")
	srv := &halfOpenLogServer{t: t, send: []int{2}, entries: []logEntry{
		{t0, claudeInit()},
		{t0, claudeSay("msg_0", "let me look", "end_turn")},
		{t0.Add(5 * time.Minute), call[0]}, // held back by the first connection
		{t0.Add(9 * time.Minute), call[1]},
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := mustKubeClient(&rest.Config{Host: hs.URL})
	src := &podLogSource{client: client, namespace: "ns", pod: "p", container: "agent",
		agentDone: func(context.Context) (bool, error) { return false, nil },
		backoff:   backoff{initial: time.Millisecond, max: 2 * time.Millisecond}, log: testLogger(t), clock: clock.RealClock{}}

	clk := clocktesting.NewFakeClock(t0.Add(10*time.Minute + time.Second)) // past the stall budget after the first two lines
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, src, p, clk)
	r.confirmTicks = 10
	ctx, term := context.WithCancel(context.Background())
	defer term()
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()

	// The first silence is the half-open stream's: the reopened one brings
	// the tool call, which is reported as progress, and nothing trips.
	p.waitFor(t, "progress from the reopened stream", func(c map[string]corev1.PodCondition) bool {
		var pr protocol.Progress
		return json.Unmarshal([]byte(c[protocol.ConditionProgress].Message), &pr) == nil && pr.Steps == 1 || c[protocol.ConditionTripped].Reason != ""
	})
	if c, _ := p.conditions(); c[protocol.ConditionTripped].Reason != "" {
		t.Fatalf("tripped on a half-open stream: %+v", c[protocol.ConditionTripped])
	}
	// A real silence: ten minutes after the last line, the reopened stream
	// brings nothing either.
	clk.SetTime(t0.Add(19*time.Minute + time.Second))
	p.waitFor(t, "the stall", has(protocol.ConditionTripped))
	term()
	<-done
	c, _ := p.conditions()
	if tr := c[protocol.ConditionTripped]; tr.Reason != "Stall" {
		t.Fatalf("Tripped = %s/%s", tr.Reason, tr.Message)
	}
	var pr protocol.Progress
	if err := json.Unmarshal([]byte(c[protocol.ConditionProgress].Message), &pr); err != nil || pr.Steps != 1 {
		t.Errorf("progress %q: want the held-back tool call counted", c[protocol.ConditionProgress].Message)
	}
	if n := srv.connections(); n != 3 {
		t.Errorf("%d connections, want 3: the first, one reopen that found lines, one that confirmed the silence", n)
	}
}
