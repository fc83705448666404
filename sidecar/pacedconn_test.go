package sidecar

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// scriptedConn returns one scripted chunk per Read, then io.EOF.
type scriptedConn struct {
	net.Conn
	chunks []int // sizes
	reads  int
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	if c.reads == len(c.chunks) {
		return 0, io.EOF
	}
	n := min(c.chunks[c.reads], len(p))
	c.reads++
	return n, nil
}

// sleepRecorder is a fake clock that records its sleeps; a sleep moves its
// time on.
type sleepRecorder struct {
	*clocktesting.FakeClock
	sleeps []time.Duration
}

func (c *sleepRecorder) Sleep(d time.Duration) {
	c.sleeps = append(c.sleeps, d)
	c.FakeClock.Sleep(d)
}

// fakeQueue is the receive queue of a scriptedConn: the script's next chunk
// is what is queued. It records the low-water marks set, and a wait for
// less than is queued sleeps out its time on the clock.
type fakeQueue struct {
	net   *scriptedConn
	clock *sleepRecorder
	marks []int
}

func (q *fakeQueue) setLowWater(n int) { q.marks = append(q.marks, n) }

func (q *fakeQueue) await(n int, d time.Duration) {
	if q.net.reads < len(q.net.chunks) && q.net.chunks[q.net.reads] >= n {
		return
	}
	q.clock.Sleep(d)
}

func TestPacedConn(t *testing.T) {
	const pace, B = 50 * time.Millisecond, logReadBuffer
	for _, tc := range []struct {
		name    string
		chunks  []int           // what the network brings, read by read (then EOF)
		busy    time.Duration   // how long the consumer works on each chunk
		noQueue bool            // the platform cannot watch the socket
		sleeps  []time.Duration // the waits before network reads
		marks   []int           // the low-water marks set, in order
	}{
		{name: "a live stream is read once per pace", chunks: []int{100, 100, 100}, busy: 20 * time.Millisecond,
			sleeps: []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond},
			marks:  []int{B, 1, B, 1, B, 1}},
		{name: "after a quiet spell the read is at once", chunks: []int{100, 100}, busy: time.Second,
			marks: []int{B, 1, B, 1}},
		{name: "a backlog is read without pause", chunks: []int{B, B, 100}, busy: time.Millisecond,
			sleeps: []time.Duration{49 * time.Millisecond}, marks: []int{B, 1}},
		{name: "a backlog's end is paced again", chunks: []int{B, 100, 100}, busy: time.Millisecond,
			sleeps: []time.Duration{49 * time.Millisecond, 49 * time.Millisecond}, marks: []int{B, 1, B, 1}},
		// A flood's reads come back short whenever the sender is a moment
		// behind: the next read waits only until a buffer's worth is there.
		{name: "a short read in a flood does not pace the next", chunks: []int{B, 100, B, 5000, B, B, 100}, busy: time.Millisecond,
			sleeps: []time.Duration{49 * time.Millisecond}, marks: []int{B, 1, B, 1, B, 1}},
		{name: "without a watched socket the pace is slept", chunks: []int{100, 100, 100}, busy: 20 * time.Millisecond,
			noQueue: true, sleeps: []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &sleepRecorder{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
			net := &scriptedConn{chunks: tc.chunks}
			q := &fakeQueue{net: net, clock: clk}
			c := &pacedConn{Conn: net, every: pace, buf: make([]byte, logReadBuffer), clock: clk, queue: q}
			if tc.noQueue {
				c.queue = nil
			}
			p := make([]byte, logReadBuffer)
			for i, size := range tc.chunks {
				if n, err := io.ReadFull(c, p[:size]); n != size || err != nil {
					t.Fatalf("chunk %d: read %d, %v; want %d", i, n, err, size)
				}
				clk.Step(tc.busy)
			}
			if n, err := c.Read(p); n != 0 || err != io.EOF {
				t.Errorf("after the script: %d, %v; want io.EOF", n, err)
			}
			if !slices.Equal(clk.sleeps, tc.sleeps) {
				t.Errorf("waits %v, want %v", clk.sleeps, tc.sleeps)
			}
			if !slices.Equal(q.marks, tc.marks) {
				t.Errorf("low-water marks %v, want %v", q.marks, tc.marks)
			}
		})
	}
}

// TestPacedConnServesWhatItHolds: small reads are served from one network
// read, without waiting.
func TestPacedConnServesWhatItHolds(t *testing.T) {
	net := &scriptedConn{chunks: []int{1000}}
	clk := &sleepRecorder{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
	c := &pacedConn{Conn: net, every: time.Hour, buf: make([]byte, logReadBuffer), clock: clk}
	p := make([]byte, 10)
	for range 100 {
		if n, err := c.Read(p); n != 10 || err != nil {
			t.Fatalf("read %d, %v", n, err)
		}
	}
	if waited := len(clk.sleeps) > 0; net.reads != 1 || waited {
		t.Errorf("%d network reads (waited: %v), want 1 and no wait", net.reads, waited)
	}
}

// TestLogStreamSpeaksHTTP1: the log is followed over HTTP/1.1 (read by the
// follower itself, on a paced connection) while the status patches keep
// HTTP/2, on a server that offers both.
func TestLogStreamSpeaksHTTP1(t *testing.T) {
	var mu sync.Mutex
	proto := map[string]string{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proto[r.Method] = r.Proto
		mu.Unlock()
		if r.Method == http.MethodPatch {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`)
			return
		}
		io.WriteString(w, "2026-12-01T00:00:00.000000000Z hello\n")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := mustKubeClient(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	rc, err := client.podLog(context.Background(), "ns", "p", &corev1.PodLogOptions{Container: "agent", Follow: true, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rc); err != nil || len(b) == 0 {
		t.Fatalf("log: %q, %v", b, err)
	}
	rc.Close()
	if _, err := client.patchPodStatus(context.Background(), "ns", "p", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if proto[http.MethodGet] != "HTTP/1.1" || proto[http.MethodPatch] != "HTTP/2.0" {
		t.Errorf("log over %q, patch over %q; want HTTP/1.1 and HTTP/2.0", proto[http.MethodGet], proto[http.MethodPatch])
	}
}
