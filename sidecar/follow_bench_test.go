package sidecar

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// BenchmarkLineReader: bounded line splitting of a claude stream.
func BenchmarkLineReader(b *testing.B) {
	text := strings.Join(loopTurn(200), "\n") + "\n"
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		lr := newLineReader(strings.NewReader(text), 0)
		for {
			if _, _, err := lr.next(); err != nil {
				break
			}
		}
	}
}

// BenchmarkPodLogSource: the whole follow path over loopback HTTP, from the
// pods/log response to delivered, timestamped lines.
func BenchmarkPodLogSource(b *testing.B) {
	benchPodLog(b, loopTurn(2000), false)
}

// BenchmarkPodLogFlood: the same path under a flood as the API server sends
// it, each line in its own write: a backlog whose socket reads come back
// short of the read buffer about half the time (issue 32: behind the read
// pace it read at 2 MB/s).
func BenchmarkPodLogFlood(b *testing.B) {
	benchPodLog(b, loopTurn(20000), true)
}

// benchPodLog follows lines stamped ahead of the clock: a sidecar never
// behind them, which does not look for a rotation (follow_rotation.go).
func benchPodLog(b *testing.B, lines []string, flushEach bool) {
	srv := &fakeLogServer{t: b, entries: timedLog(lines, time.Now().Add(time.Hour), time.Microsecond), flushEach: flushEach}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	// No client-side rate limit: it would measure the limiter (5 QPS).
	client := mustKubeClient(&rest.Config{Host: hs.URL, QPS: -1})
	var size int
	for _, l := range lines {
		size += len(l) + len(kubeletTimeFormat) + 2
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		src := &podLogSource{client: client, namespace: "ns", pod: "p", container: "agent", backoff: defaultBackoff,
			agentDone: func(context.Context) (bool, error) { return true, nil }, clock: clock.RealClock{}}
		n := 0
		if err := src.Follow(context.Background(), func(streamLine) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != len(lines) {
			b.Fatal(fmt.Sprintf("%d lines, want %d", n, len(lines)))
		}
	}
}
