package sidecar

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// scriptedSource plays lines, then either ends (the agent exited) or, with
// hold set, waits until hold is closed (the agent runs on).
type scriptedSource struct {
	lines     []string
	hold      chan struct{}
	connected atomic.Bool
	// before, when set, runs before each line is emitted (the agent's side:
	// a hook run between two tool calls).
	before func()
	// stamped, when set, gives each line (by index) its log timestamp.
	stamped func(i int) time.Time
}

func (s *scriptedSource) Connected() bool { return s.connected.Load() }

func (s *scriptedSource) Follow(ctx context.Context, emit func(streamLine) error) error {
	s.connected.Store(true)
	defer s.connected.Store(false)
	for i, l := range s.lines {
		if s.before != nil {
			s.before()
		}
		line := streamLine{Data: []byte(l)}
		if s.stamped != nil {
			line.Time = s.stamped(i)
		}
		if err := emit(line); err != nil {
			return err
		}
	}
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// syncPatcher makes a podPatcher safe to read while a runner writes.
type syncPatcher struct {
	mu sync.Mutex
	p  *podPatcher
}

func (s *syncPatcher) patch(ctx context.Context, body []byte) (*corev1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.patch(ctx, body)
}

func (s *syncPatcher) conditions() (map[string]corev1.PodCondition, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]corev1.PodCondition{}
	for _, c := range s.p.pod.Status.Conditions {
		out[string(c.Type)] = c
	}
	return out, s.p.writes
}

// waitFor polls until ok says the Pod is as wanted.
func (s *syncPatcher) waitFor(t *testing.T, what string, ok func(map[string]corev1.PodCondition) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, _ := s.conditions(); ok(c) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c, _ := s.conditions()
	t.Fatalf("timed out waiting for %s; conditions: %+v", what, c)
}

func testRunner(t *testing.T, src source, p statusPatcher, clk clock.PassiveClock) *runner {
	t.Helper()
	cfg := Options{Format: monitor.FormatClaude, Guards: monitor.DefaultGuards(), Prices: monitor.DefaultPrices(),
		PodName: "p", Namespace: "ns", AgentContainer: "agent", Drain: 50 * time.Millisecond, WriteGrace: 5 * time.Second}
	log := testLogger(t)
	rep := &reporter{pod: p, clock: clk, backoff: backoff{initial: time.Millisecond, max: 10 * time.Millisecond}, log: log}
	return &runner{cfg: cfg, src: src, rep: rep, log: log, clock: clk, tick: 5 * time.Millisecond, idle: 0}
}

// runUntil runs r until settled says the Pod is settled, then stops it like
// the kubelet does (SIGTERM) and returns run's error.
func runUntil(t *testing.T, r *runner, p *syncPatcher, settled func(map[string]corev1.PodCondition) bool) {
	t.Helper()
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "the turn to settle", settled)
	term()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func has(typ string) func(map[string]corev1.PodCondition) bool {
	return func(c map[string]corev1.PodCondition) bool { _, ok := c[typ]; return ok }
}

func TestRunReports(t *testing.T) {
	type want struct {
		reason, message string // "" reason: absent
	}
	cases := []struct {
		name     string
		lines    []string
		settled  string // the condition that ends the turn
		tripped  want
		silent   want
		finished want
		progress string
	}{
		{name: "identical calls trip, nothing after", lines: loopTurn(6), settled: protocol.ConditionTripped,
			tripped:  want{"IdenticalCalls", "repeated an identical tool call 4 times"},
			progress: `{"steps":4,"costUSD":"0.00135"}`},
		{name: "healthy turn finishes with its result", lines: healthyTurn(), settled: protocol.ConditionFinished,
			finished: want{"Result", `{"steps":1,"costUSD":"0.01","stopReason":"end","result":true,"lines":5,"unparsed":0,"agentSessionID":"s1","complete":true}`},
			progress: `{"steps":1,"costUSD":"0.01"}`},
		{name: "length stop comes with the summary", lines: lengthTurn(), settled: protocol.ConditionFinished,
			tripped:  want{"LengthStop", "the last model message stopped at the output length limit"},
			finished: want{"NoResult", `{"steps":0,"costUSD":"0.00045","stopReason":"length","result":false,"lines":2,"unparsed":0,"agentSessionID":"s1","complete":true}`}},
		{name: "silent run is nudged and goes on", lines: silentTurn(14, true), settled: protocol.ConditionFinished,
			silent:   want{"SilentRun", "streak 1: 13 tool-only model messages since the agent last spoke: nobody can see tool calls; report what you have"},
			finished: want{"Result", `{"steps":14,"costUSD":"0.01","stopReason":"end","result":true,"lines":31,"unparsed":0,"agentSessionID":"s1","complete":true}`},
			progress: `{"steps":14,"costUSD":"0.01"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &syncPatcher{p: &podPatcher{t: t}}
			r := testRunner(t, &scriptedSource{lines: tc.lines}, p, clock.RealClock{})
			runUntil(t, r, p, has(tc.settled))
			got, writes := p.conditions()
			for typ, w := range map[string]want{protocol.ConditionTripped: tc.tripped, protocol.ConditionSilent: tc.silent, protocol.ConditionFinished: tc.finished} {
				c, ok := got[typ]
				switch {
				case w.reason == "" && ok:
					t.Errorf("%s = %s/%s, want none", typ, c.Reason, c.Message)
				case w.reason != "" && (c.Status != corev1.ConditionTrue || c.Reason != w.reason || c.Message != w.message):
					t.Errorf("%s = %s %s/%s\nwant True %s/%s", typ, c.Status, c.Reason, c.Message, w.reason, w.message)
				}
			}
			if c := got[protocol.ConditionProgress]; tc.progress != "" && (c.Reason != protocol.ReasonRunning || c.Message != tc.progress) {
				t.Errorf("Progress = %s/%s, want Running/%s", c.Reason, c.Message, tc.progress)
			}
			if tc.finished.reason != "" {
				var s protocol.Summary
				if err := json.Unmarshal([]byte(got[protocol.ConditionFinished].Message), &s); err != nil {
					t.Errorf("Finished is not a Summary: %v", err)
				}
			}

			// A restarted sidecar replays the same stream: no write at all.
			r2 := testRunner(t, &scriptedSource{lines: tc.lines}, p, clock.RealClock{})
			ctx, term := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer term()
			if err := r2.run(ctx); err != nil {
				t.Fatal(err)
			}
			if _, again := p.conditions(); again != writes {
				t.Fatalf("the restarted sidecar wrote %d times", again-writes)
			}
		})
	}
}

// A sidecar that dies in the middle of a turn and starts again replays what
// it had seen without writing any of it again, and settles the turn as one
// uninterrupted sidecar would have.
func TestRunRestartMidTurn(t *testing.T) {
	seen := silentTurn(14, false) // nudged, progress written
	rest := append(seen[:len(seen):len(seen)], claudeSay("msg_end", "done", "end_turn"), claudeResult())

	p := &syncPatcher{p: &podPatcher{t: t}}
	first := testRunner(t, &scriptedSource{lines: seen, hold: make(chan struct{})}, p, clock.RealClock{})
	crash, kill := context.WithCancel(context.Background())
	followCtx, stopFollow := context.WithCancel(crash)
	done := make(chan error, 1)
	go func() {
		if err := first.rep.load(crash); err != nil {
			done <- err
			return
		}
		done <- first.watch(followCtx, stopFollow, crash)
	}()
	p.waitFor(t, "the first sidecar's progress", func(c map[string]corev1.PodCondition) bool {
		return c[protocol.ConditionProgress].Message == `{"steps":14,"costUSD":"0.0063"}` && c[protocol.ConditionSilent].Reason == "SilentRun"
	})
	kill() // the process dies: no final writes get through
	<-done
	_, before := p.conditions()

	hold := make(chan struct{})
	second := testRunner(t, &scriptedSource{lines: rest, hold: hold}, p, clock.RealClock{})
	close(hold) // the agent ends after the replayed lines
	runUntil(t, second, p, has(protocol.ConditionFinished))
	got, _ := p.conditions()
	if m := got[protocol.ConditionFinished].Message; m != `{"steps":14,"costUSD":"0.01","stopReason":"end","result":true,"lines":31,"unparsed":0,"agentSessionID":"s1","complete":true}` {
		t.Fatalf("Finished = %s", m)
	}
	// Every write of the second sidecar carries news: progress past what the
	// first one reported (the two lines after it), and the summary.
	for _, body := range p.p.bodies[before:] {
		var patch struct {
			Status struct{ Conditions []condition }
		}
		if err := json.Unmarshal([]byte(body), &patch); err != nil {
			t.Fatal(err)
		}
		for _, c := range patch.Status.Conditions {
			switch c.Type {
			case protocol.ConditionFinished:
			case protocol.ConditionDeltasHidden:
				// News too: the stream has no deltas, which its final
				// answer, read only by the second sidecar, decided.
			case protocol.ConditionProgress:
				var pr protocol.Progress
				_ = json.Unmarshal([]byte(c.Message), &pr)
				if pr.Cost <= mustMoney("0.0063") {
					t.Errorf("the replay wrote old progress again: %s", c.Message)
				}
			default:
				t.Errorf("the restarted sidecar wrote %s %s/%s again", c.Type, c.Reason, c.Message)
			}
		}
	}
	t.Logf("writes: first sidecar %d, restarted sidecar %d", before, len(p.p.bodies)-before)
}

// SIGTERM while the agent still runs: what was read is judged and the
// summary is written before the sidecar exits.
func TestRunSummaryOnSIGTERM(t *testing.T) {
	p := &syncPatcher{p: &podPatcher{t: t}}
	src := &scriptedSource{lines: healthyTurn()[:3], hold: make(chan struct{})}
	r := testRunner(t, src, p, clock.RealClock{})
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "progress", has(protocol.ConditionProgress))
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := p.conditions()
	if c := got[protocol.ConditionFinished]; c.Reason != protocol.ReasonNoResult || c.Message != `{"steps":1,"costUSD":"0.00045","stopReason":"tool_use","result":false,"lines":3,"unparsed":0,"agentSessionID":"s1","complete":false}` {
		t.Fatalf("Finished = %s/%s", c.Reason, c.Message)
	}
}

// With no line arriving, the engine is ticked from the clock and a stall
// trips live.
func TestRunStallFromTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	p := &syncPatcher{p: &podPatcher{t: t}}
	src := &scriptedSource{lines: append([]string{claudeInit()}, claudeToolCall(1, "make test")[0]), hold: make(chan struct{})}
	r := testRunner(t, src, p, clk)
	ctx, term := context.WithCancel(context.Background())
	defer term()
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "progress", has(protocol.ConditionProgress)) // the call is outstanding
	clk.Step(30 * time.Minute)                                // the tool budget, not more: no trip
	time.Sleep(50 * time.Millisecond)
	if c, _ := p.conditions(); c[protocol.ConditionTripped].Reason != "" {
		t.Fatalf("tripped at the budget: %+v", c[protocol.ConditionTripped])
	}
	clk.Step(time.Second)
	p.waitFor(t, "the stall", has(protocol.ConditionTripped))
	term()
	<-done
	c, _ := p.conditions()
	if tr := c[protocol.ConditionTripped]; tr.Reason != "Stall" || tr.Message != "no output for more than 30m0s while a tool call was outstanding" {
		t.Fatalf("Tripped = %s/%s", tr.Reason, tr.Message)
	}
	if _, ok := c[protocol.ConditionFinished]; ok {
		t.Fatalf("Finished written after a trip")
	}
}

// The file source through the whole loop: a stream file written by the
// agent, with a line over the bound, settles like replay would judge it.
func TestRunFromAStreamFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.jsonl")
	lines := healthyTurn()
	long := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"` + strings.Repeat("y", 4096) + `"}]}}`
	lines = append(lines[:2:2], append([]string{long}, lines[2:]...)...)
	var exited atomic.Bool
	src := &fileSource{path: path, poll: time.Millisecond, donePoll: time.Millisecond, maxLine: 1024, log: testLogger(t), clock: clock.RealClock{},
		agentDone: func(context.Context) (bool, error) { return exited.Load(), nil }}
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, src, p, clock.RealClock{})
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	time.Sleep(20 * time.Millisecond) // the file appears after the sidecar started
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exited.Store(true)
	p.waitFor(t, "the summary", has(protocol.ConditionFinished))
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := p.conditions()
	if c := got[protocol.ConditionFinished]; c.Reason != "Result" || c.Message != `{"steps":1,"costUSD":"0.01","stopReason":"end","result":true,"lines":6,"unparsed":1,"agentSessionID":"s1","complete":true}` {
		t.Fatalf("Finished = %s/%s", c.Reason, c.Message)
	}
}
