package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// logEntry is one line of a container log as the kubelet keeps it.
type logEntry struct {
	ts   time.Time
	text string
}

// drop is how one connection to the fake log endpoint ends early.
type drop struct {
	after int  // lines sent in full first
	half  bool // then half of the next line
	abort bool // then the connection breaks (else the response ends cleanly)
}

// fakeLogServer serves the pods/log endpoint the way the API server relays
// the kubelet: lines with timestamp >= sinceTime (second precision on the
// wire), in log order, each with its RFC 3339 prefix. The i-th connection
// ends as drops[i] says; once the drops are used up the container counts as
// terminated and a connection sends the rest and ends.
type fakeLogServer struct {
	t       testing.TB
	path    string // default /api/v1/namespaces/ns/pods/p/log
	entries []logEntry
	drops   []drop
	noEOL   bool // the log's last line has no newline
	exited  bool // the container has terminated from the start
	// flushEach sends each line in its own write, as the API server
	// relays the kubelet's flushes.
	flushEach bool
	// starts[i] is the first entry of the file the i-th connection reads:
	// the kubelet rotated the ones before it away (default 0). current is
	// the first entry of the file a request without follow reads (the
	// rotation probe's).
	starts  []int
	current int

	mu     sync.Mutex
	conns  int
	since  []string // sinceTime of each request, "" when none
	probes int      // requests without follow, with limitBytes
}

const kubeletTimeFormat = "2006-01-02T15:04:05.000000000Z07:00" // what the kubelet writes

func (s *fakeLogServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path := s.path
	if path == "" {
		path = "/api/v1/namespaces/ns/pods/p/log"
	}
	if r.URL.Path == path && q.Get("follow") == "" && q.Get("limitBytes") != "" {
		s.probe(w, q.Get("limitBytes"))
		return
	}
	if r.URL.Path != path || q.Get("container") != "agent" ||
		q.Get("follow") != "true" || q.Get("timestamps") != "true" {
		s.t.Errorf("unexpected request %s", r.URL)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var since time.Time
	if v := q.Get("sinceTime"); v != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.mu.Lock()
	i := s.conns
	s.conns++
	s.since = append(s.since, q.Get("sinceTime"))
	s.mu.Unlock()

	start := 0
	if i < len(s.starts) {
		start = s.starts[i]
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	var out []string
	for j, e := range s.entries {
		if j < start || e.ts.Before(since) {
			continue
		}
		line := e.ts.Format(kubeletTimeFormat) + " " + e.text
		if j < len(s.entries)-1 || !s.noEOL {
			line += "\n"
		}
		out = append(out, line)
	}
	var d *drop
	if i < len(s.drops) {
		d = &s.drops[i]
	}
	for j, line := range out {
		if d != nil && j == d.after {
			if d.half {
				fmt.Fprint(w, line[:len(line)/2])
			}
			break
		}
		fmt.Fprint(w, line)
		if s.flushEach {
			w.(http.Flusher).Flush()
		}
	}
	w.(http.Flusher).Flush()
	if d != nil && d.abort {
		panic(http.ErrAbortHandler) // the connection breaks without the chunked trailer
	}
}

// probe serves the start of the current file, at most limit bytes.
func (s *fakeLogServer) probe(w http.ResponseWriter, limit string) {
	s.mu.Lock()
	s.probes++
	s.mu.Unlock()
	n, err := strconv.Atoi(limit)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var b strings.Builder
	for _, e := range s.entries[s.current:] {
		if b.Len() >= n {
			break
		}
		b.WriteString(e.ts.Format(kubeletTimeFormat) + " " + e.text + "\n")
	}
	out := b.String()
	fmt.Fprint(w, out[:min(n, len(out))])
}

// terminated says whether the scripted drops are over (the agent exited).
func (s *fakeLogServer) terminated(context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited || s.conns >= len(s.drops), nil
}

// testLog builds a log with the awkward cases: runs of equal timestamps,
// many lines in one second, second boundaries, and a stderr line whose
// timestamp is a little older than the line before it.
func testLog() []logEntry {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ms := []int{
		100, 100, 100, 100, // 0-3: one write, four lines
		200, 999, // 4-5
		1000, 1000, 1001, // 6-8: on the second boundary
		1500, 1400, 1600, // 9-11: 10 is out of order
		3000, 3000, 3000, 3000, 3000, // 12-16
		3700, 5200, 5200, 9999, // 17-20
	}
	out := make([]logEntry, len(ms))
	for i, m := range ms {
		out[i] = logEntry{ts: base.Add(time.Duration(m) * time.Millisecond), text: fmt.Sprintf(`{"n":%d}`, i)}
	}
	return out
}

// timedLog stamps lines step apart, starting at base.
func timedLog(lines []string, base time.Time, step time.Duration) []logEntry {
	out := make([]logEntry, len(lines))
	for i, l := range lines {
		out[i] = logEntry{ts: base.Add(time.Duration(i) * step), text: l}
	}
	return out
}

func TestPodLogSourceResumes(t *testing.T) {
	cases := []struct {
		name   string
		drops  []drop
		noEOL  bool
		exited bool
	}{
		{name: "no drop"},
		{name: "clean end while the agent runs", drops: []drop{{after: 5}}},
		{name: "broken mid-line", drops: []drop{{after: 7, half: true, abort: true}}},
		{name: "ended mid-line", drops: []drop{{after: 7, half: true}}},
		{name: "inside a run of equal timestamps", drops: []drop{{after: 2, abort: true}, {after: 2, abort: true}}},
		{name: "around the out-of-order line", drops: []drop{{after: 10, abort: true}, {after: 1, half: true, abort: true}}},
		{name: "broken before any line", drops: []drop{{after: 0, abort: true}, {after: 0}, {after: 14, half: true, abort: true}}},
		{name: "many drops", drops: []drop{{after: 1}, {after: 1, abort: true}, {after: 3, half: true}, {after: 0}, {after: 4, abort: true}, {after: 2, half: true, abort: true}}},
		{name: "last line without newline", drops: []drop{{after: 19}}, noEOL: true},
		{name: "last line without newline, cut", drops: []drop{{after: 20, half: true}}, noEOL: true},
		// The API server ends its response cleanly when the kubelet's stream
		// breaks: after the agent exited, a clean end is not the end of the log.
		{name: "clean ends after the agent exited", exited: true,
			drops: []drop{{after: 1, abort: true}, {after: 3, half: true}, {after: 2}}},
		{name: "clean end mid-line of the unterminated last line", exited: true, noEOL: true,
			drops: []drop{{after: 20, half: true}, {after: 0, half: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &fakeLogServer{t: t, entries: testLog(), drops: tc.drops, noEOL: tc.noEOL, exited: tc.exited}
			got := followAll(t, srv)
			want := make([]string, len(srv.entries))
			for i, e := range srv.entries {
				want[i] = e.text
			}
			if !slices.Equal(got, want) {
				t.Fatalf("delivered %d lines:\n%s\nwant %d:\n%s", len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
			}
			// Each drop costs one connection; the end costs one or two more
			// (the log is read from the cursor once the agent is known to
			// have exited, until a stream brings nothing new).
			if srv.conns < len(tc.drops)+1 || srv.conns > len(tc.drops)+3 {
				t.Fatalf("%d connections for %d drops", srv.conns, len(tc.drops))
			}
			t.Logf("sinceTime per connection: %q", srv.since)
		})
	}
}

// followAll runs a podLogSource against srv until the log is over and
// returns the delivered lines without their timestamp prefix.
func followAll(t *testing.T, srv *fakeLogServer) []string {
	t.Helper()
	_, got := followSource(t, srv)
	return got
}

// followSource is followAll that also returns the source it ran.
func followSource(t *testing.T, srv *fakeLogServer) (*podLogSource, []string) {
	t.Helper()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := mustKubeClient(&rest.Config{Host: hs.URL})
	src := &podLogSource{client: client, namespace: "ns", pod: "p", container: "agent",
		agentDone: srv.terminated, backoff: backoff{initial: time.Millisecond, max: 4 * time.Millisecond},
		log: testLogger(t), clock: clock.RealClock{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	err := src.Follow(ctx, func(l streamLine) error {
		ts, ok := parseLogTime(l.Data)
		if !ok || !ts.Equal(l.Time) {
			t.Errorf("line %q: time %v, parsed %v %v", l.Data, l.Time, ts, ok)
		}
		_, text, _ := strings.Cut(string(l.Data), " ")
		got = append(got, text)
		return nil
	})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if src.Connected() {
		t.Fatalf("still connected after the end")
	}
	return src, got
}

func testLogger(t *testing.T) logr.Logger { return testr.New(t) }
