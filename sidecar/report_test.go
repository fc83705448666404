package sidecar

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// podPatcher applies status patches to an in-memory Pod with the API
// server's strategic-merge code, and counts the patches that are writes.
// The envtest suite runs the same reporter on a real API server; this one is
// for the throttle's timing, which wants a clock the test turns.
type podPatcher struct {
	t      *testing.T
	pod    corev1.Pod
	writes int
	bodies []string // the patches that were writes
	fail   int      // the next fail patches are answered with a transient error
}

func (p *podPatcher) patch(ctx context.Context, body []byte) (*corev1.Pod, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // as client-go: a request on a dead context is not sent
	}
	if p.fail > 0 {
		p.fail--
		return nil, context.DeadlineExceeded
	}
	if string(body) != "{}" {
		p.writes++
		p.bodies = append(p.bodies, string(body))
	}
	orig, _ := json.Marshal(p.pod)
	out, err := strategicpatch.StrategicMergePatch(orig, body, corev1.Pod{})
	if err != nil {
		p.t.Fatalf("patch %s: %v", body, err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		p.t.Fatal(err)
	}
	p.pod = pod
	return pod.DeepCopy(), nil
}

func newTestReporter(t *testing.T, p *podPatcher, clk clock.PassiveClock) *reporter {
	r := &reporter{pod: p, clock: clk, backoff: backoff{initial: time.Microsecond, max: time.Millisecond},
		period: 15 * time.Second, log: testLogger(t)}
	if err := r.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProgressThrottle(t *testing.T) {
	type call struct {
		at    time.Duration // since the start
		steps int
		cost  string
		write bool // whether this call writes
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{name: "at most one write per period, the first one too", calls: []call{
			{0, 1, "0.01", false}, // a period after the sidecar started, not at once
			{5 * time.Second, 2, "0.02", false},
			{14*time.Second + 999*time.Millisecond, 3, "0.03", false},
			{15 * time.Second, 3, "0.03", true}, // held back, goes out at the next call after the period
			{16 * time.Second, 4, "0.04", false},
			{31 * time.Second, 5, "0.05", true},
		}},
		{name: "nothing new, nothing written", calls: []call{
			{0, 0, "0", false}, // zero progress is not news
			{20 * time.Second, 2, "0", true},
			{40 * time.Second, 2, "0", false},
			{60 * time.Second, 2, "0.0", false}, // the same amount, spelled otherwise
		}},
		{name: "cost alone moves it", calls: []call{
			{15 * time.Second, 3, "0.10", true},
			{30 * time.Second, 3, "0.25", true},
		}},
	}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &podPatcher{t: t}
			c := clocktesting.NewFakeClock(start)
			r := newTestReporter(t, p, c)
			for i, k := range tc.calls {
				c.SetTime(start.Add(k.at))
				before := p.writes
				r.progress(context.Background(), counts(k.steps, k.cost))
				if wrote := p.writes > before; wrote != k.write {
					t.Fatalf("call %d at %v: wrote=%v, want %v", i, k.at, wrote, k.write)
				}
			}
		})
	}
}

// A restarted sidecar replays the stream from the start: its progress runs
// through values the Pod already passed, and none of them is written.
func TestProgressNeverGoesBack(t *testing.T) {
	p := &podPatcher{t: t}
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	first := newTestReporter(t, p, c)
	c.Step(15 * time.Second)
	first.progress(context.Background(), counts(40, "1.20"))
	if p.writes != 1 {
		t.Fatalf("first sidecar wrote %d times", p.writes)
	}
	second := newTestReporter(t, p, c)
	for steps := 0; steps <= 40; steps++ {
		c.Step(time.Minute)
		second.progress(context.Background(), counts(steps, "1.20"))
	}
	if p.writes != 1 {
		t.Fatalf("the replay wrote %d more times", p.writes-1)
	}
	c.Step(time.Minute)
	second.progress(context.Background(), counts(41, "1.25"))
	if p.writes != 2 {
		t.Fatalf("new progress after the replay was not written")
	}
}

func TestReporterRetriesAndIsIdempotent(t *testing.T) {
	p := &podPatcher{t: t}
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r := newTestReporter(t, p, c)
	ctx := context.Background()

	p.fail = 3 // the API server is away for a moment
	if err := r.tripped(ctx, "identicalCalls", "repeated an identical tool call 4 times", counts(7, "0.5")); err != nil {
		t.Fatal(err)
	}
	if p.writes != 1 || p.fail != 0 {
		t.Fatalf("writes=%d, failures left=%d", p.writes, p.fail)
	}
	got := map[string]corev1.PodCondition{}
	for _, c := range p.pod.Status.Conditions {
		got[string(c.Type)] = c
	}
	tr := got[protocol.ConditionTripped]
	if tr.Status != corev1.ConditionTrue || tr.Reason != "IdenticalCalls" || tr.Message != "repeated an identical tool call 4 times" || tr.LastTransitionTime.IsZero() {
		t.Fatalf("Tripped = %+v", tr)
	}
	if pr := got[protocol.ConditionProgress]; pr.Message != `{"steps":7,"costUSD":"0.50"}` {
		t.Fatalf("Progress = %+v", pr)
	}

	// The same verdicts again, from this sidecar or a restarted one: no write.
	again := newTestReporter(t, p, c)
	for _, r := range []*reporter{r, again} {
		if err := r.tripped(ctx, "identicalCalls", "repeated an identical tool call 4 times", counts(7, "0.5")); err != nil {
			t.Fatal(err)
		}
	}
	if p.writes != 1 {
		t.Fatalf("%d writes, want 1", p.writes)
	}
	if !again.over() {
		t.Fatalf("a restarted sidecar does not see the turn as settled")
	}
}

// counts is a progress report of steps and a decimal cost.
func counts[N int | int64](steps N, cost string) protocol.Progress {
	return protocol.Progress{Steps: int64(steps), Cost: mustMoney(cost)}
}

func mustMoney(s string) monitor.Money {
	m, err := monitor.ParseMoney(s)
	if err != nil {
		panic(err)
	}
	return m
}
