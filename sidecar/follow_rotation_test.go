package sidecar

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// texts are the entries' texts from index from on, but those in gone.
func texts(entries []logEntry, gone ...int) []string {
	var out []string
	for i, e := range entries {
		if !slices.Contains(gone, i) {
			out = append(out, e.text)
		}
	}
	return out
}

// A stream resumed after the kubelet rotated the log past the cursor starts
// in the current file: the lines in between are gone, the warning says so,
// and the lines the stream brings that were not read are new, not skipped.
func TestResumePastRotation(t *testing.T) {
	// Stamped from the next whole second on, so the sidecar is in step and
	// does not probe: the resumed stream alone tells.
	log := testLog() // seconds 0 (lines 0-5), 1 (6-11), 3 (12-17), 5 (18-19), 9 (20)
	shift := time.Now().Truncate(time.Second).Add(time.Second).Sub(log[0].ts.Truncate(time.Second))
	for i := range log {
		log[i].ts = log[i].ts.Add(shift)
	}
	for _, tc := range []struct {
		name   string
		drops  []drop
		starts []int // the first line of each connection's file
		want   []string
		warned bool
	}{
		{name: "resumed in the same file", drops: []drop{{after: 5}}, want: texts(log)},
		{name: "resumed past a rotation", drops: []drop{{after: 5}}, starts: []int{0, 12, 12, 12},
			want: texts(log, 5, 6, 7, 8, 9, 10, 11), warned: true},
		{name: "resumed past a rotation mid-line", drops: []drop{{after: 8, half: true, abort: true}}, starts: []int{0, 18, 18, 18},
			want: texts(log, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17), warned: true},
		// Rotated inside the cursor's second (a flood writes thousands of
		// lines a second): the current file starts with another line than
		// the first the cursor counted, so counting would skip new lines.
		// Lines stamped up to the newest delivered are skipped instead.
		{name: "resumed past a rotation inside the cursor's second", drops: []drop{{after: 8}}, starts: []int{0, 9, 9, 9},
			want: texts(log, 8), warned: true},
		// The new file starts inside a run of equal timestamps (12-16):
		// its first line is stamped as the first counted, but is another.
		{name: "resumed past a rotation, lines read again skipped by time", drops: []drop{{after: 18}}, starts: []int{0, 15, 15, 15},
			want: texts(log), warned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &fakeLogServer{t: t, entries: log, drops: tc.drops, starts: tc.starts, current: 0}
			if len(tc.starts) > 0 {
				srv.current = tc.starts[len(tc.starts)-1]
			}
			src, got := followSource(t, srv)
			if !slices.Equal(got, tc.want) {
				t.Errorf("delivered %s\nwant      %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
			if msg := src.LogRotated(); (msg != "") != tc.warned {
				t.Errorf("warning %q, want one: %v", msg, tc.warned)
			} else if tc.warned && !strings.Contains(msg, "may have been rotated away unread") {
				t.Errorf("warning %q", msg)
			}
			if msg := src.LogRotated(); msg != "" {
				t.Errorf("the warning was told twice: %q", msg)
			}
		})
	}
}

// After a restart the cursor has only its second and count (the
// checkpoint's): a first line in a later second tells a rotation, and then
// nothing is skipped; else the count is.
func TestCheckResumeAfterRestart(t *testing.T) {
	sec := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	line := func(d time.Duration) []byte { return []byte(sec.Add(d).Format(kubeletTimeFormat) + " {}") }
	for _, tc := range []struct {
		name    string
		first   []byte
		rotated bool
	}{
		{"the cursor's second", line(300 * time.Millisecond), false},
		{"a later second", line(1200 * time.Millisecond), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &podLogSource{log: testLogger(t)}
			s.Resume(logCursor{since: sec, seen: 3})
			skip := resumeSkip{count: 3}
			s.checkResume(tc.first, &skip)
			if got := s.LogRotated() != ""; got != tc.rotated {
				t.Errorf("rotated %v, want %v", got, tc.rotated)
			}
			if want := map[bool]int{false: 3, true: 0}[tc.rotated]; skip.count != want || !skip.through.IsZero() {
				t.Errorf("skip %+v, want a count of %d", skip, want)
			}
		})
	}
}

// While the sidecar lags, it looks at the start of the current file, at most
// once per rotationProbeEvery: a first line younger than the line it reads
// means the kubelet rotated past it. A sidecar in step never looks.
func TestProbeRotation(t *testing.T) {
	old := testLog() // stamped 2026-03-01: read now, far behind
	fresh := timedLog(texts(old), time.Now().Add(time.Second), time.Millisecond)
	for _, tc := range []struct {
		name    string
		entries []logEntry
		current int // the first line of the current file
		warned  bool
		probes  int
	}{
		{name: "behind, the log rotated past the line read", entries: old, current: 12, warned: true, probes: 1},
		{name: "behind, the line read still in the current file", entries: old, current: 0, probes: 1},
		{name: "in step", entries: fresh, current: 12, probes: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &fakeLogServer{t: t, entries: tc.entries, current: tc.current}
			src, got := followSource(t, srv)
			if len(got) != len(tc.entries) {
				t.Errorf("delivered %d lines, want %d", len(got), len(tc.entries))
			}
			msg := src.LogRotated()
			if (msg != "") != tc.warned {
				t.Errorf("warning %q, want one: %v", msg, tc.warned)
			}
			if tc.warned && !strings.Contains(msg, tc.entries[tc.current].ts.Format(time.RFC3339Nano)) {
				t.Errorf("warning %q does not name the log's new start", msg)
			}
			if srv.probes != tc.probes {
				t.Errorf("%d probes, want %d", srv.probes, tc.probes)
			}
		})
	}
}

func TestRotationProbeDue(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var w rotationWatch
	for i, s := range []struct {
		lag, since time.Duration // the line's lag; the time since the start
		want       bool
	}{
		{time.Second, 0, false},                   // in step
		{3 * time.Second, 0, true},                // behind: look
		{3 * time.Second, 5 * time.Second, false}, // looked 5 s ago
		{3 * time.Second, 10 * time.Second, true},
	} {
		now := at.Add(time.Hour + s.since)
		if got := w.probeDue(now.Add(-s.lag), now); got != s.want {
			t.Errorf("step %d: due %v, want %v", i, got, s.want)
		}
	}
	w.found("rotated")
	if w.probeDue(at, at.Add(time.Hour)) {
		t.Error("a probe after the warning was found")
	}
}

// The warning goes to the Pod at once, once: a sidecar restarted after it
// does not write it again; a failed write leaves it for the next one.
func TestReportLogRotated(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	p := &podPatcher{t: t}
	r := newTestReporter(t, p, clk)
	r.logRotated(ctx, "rotated past")
	if p.writes != 1 || !strings.Contains(p.bodies[0], protocol.ConditionLogRotated) || !strings.Contains(p.bodies[0], protocol.ReasonLogRotated) {
		t.Fatalf("writes %d: %v", p.writes, p.bodies)
	}
	restarted := newTestReporter(t, p, clk)
	restarted.logRotated(ctx, "rotated past again")
	if p.writes != 1 {
		t.Errorf("a restarted sidecar wrote it again: %v", p.bodies)
	}

	p2 := &podPatcher{t: t}
	r2 := newTestReporter(t, p2, clk)
	p2.fail = 1
	r2.logRotated(ctx, "rotated past")
	if p2.writes != 0 || len(r2.riders) != 1 {
		t.Fatalf("after a failed write: %d writes, riders %v", p2.writes, r2.riders)
	}
	if err := r2.ensure(ctx, desired{Type: protocol.ConditionFinished, Reason: protocol.ReasonResult, Message: "{}"}); err != nil {
		t.Fatal(err)
	}
	if p2.writes != 1 || !strings.Contains(p2.bodies[0], protocol.ConditionLogRotated) {
		t.Errorf("the warning did not ride with the next write: %v", p2.bodies)
	}
}

// Through the run loop: a stream resumed past a rotation puts LogRotated on
// the Pod while the turn runs, and the summary counts the lines that were
// read (the rotated ones missing, the new ones not skipped).
func TestLogRotatedOnThePod(t *testing.T) {
	lines := healthyTurn() // init, tool call and its result, the answer, the result
	base := time.Now().Truncate(time.Second).Add(time.Second)
	srv := &fakeLogServer{t: t, entries: timedLog(lines, base, time.Second),
		drops: []drop{{after: 2}}, starts: []int{0, 3, 3, 3}, current: 3}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	src := &podLogSource{client: mustKubeClient(&rest.Config{Host: hs.URL}), namespace: "ns", pod: "p", container: "agent",
		agentDone: srv.terminated, backoff: backoff{initial: time.Millisecond, max: 4 * time.Millisecond},
		log: testLogger(t), clock: clock.RealClock{}}
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, src, p, clock.RealClock{})
	runUntil(t, r, p, has(protocol.ConditionFinished))
	c, _ := p.conditions()
	rot := c[protocol.ConditionLogRotated]
	if rot.Reason != protocol.ReasonLogRotated || !strings.Contains(rot.Message, "may have been rotated away unread") {
		t.Errorf("LogRotated = %+v", rot)
	}
	var s protocol.Summary
	if err := json.Unmarshal([]byte(c[protocol.ConditionFinished].Message), &s); err != nil {
		t.Fatal(err)
	}
	if want := len(lines) - 1; s.Lines != want {
		t.Errorf("summary: %d lines, want %d (one rotated away)", s.Lines, want)
	}
}
