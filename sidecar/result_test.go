package sidecar

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// An agent that printed its final result and keeps its output open is told
// to the controller once, resultQuiet after the result, with the time the
// result was read; an agent without a result, or still inside the quiet
// time, costs no write.
func TestResultWatch(t *testing.T) {
	healthy, err := os.ReadFile("../test/fakeagent/scenarios/claude/healthy.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(healthy)), "\n")
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		lines    []string
		ticks    []time.Duration
		present  bool // the Pod carries a Result condition already (a restarted sidecar)
		want     int  // writes
		progress bool // the write carries the progress too
	}{
		{name: "result, then quiet", lines: lines, ticks: []time.Duration{time.Second, resultQuiet, resultQuiet + time.Second}, want: 1, progress: true},
		{name: "result, exit within the quiet time", lines: lines, ticks: []time.Duration{time.Second, resultQuiet - time.Millisecond}, want: 0},
		{name: "no result yet", lines: lines[:len(lines)-1], ticks: []time.Duration{time.Minute}, want: 0},
		{name: "said before the restart", lines: lines, ticks: []time.Duration{time.Minute}, present: true, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &podPatcher{t: t}
			if tc.present {
				p.pod.Status.Conditions = []corev1.PodCondition{{Type: protocol.ConditionResult, Status: corev1.ConditionTrue,
					Reason: protocol.ReasonResult, LastTransitionTime: metav1.NewTime(start)}}
			}
			c := clocktesting.NewFakeClock(start)
			rep := newTestReporter(t, p, c)
			eng, err := monitor.New(monitor.Options{Format: "claude"})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tc.lines {
				eng.Feed([]byte(l), start)
			}
			var w resultWatch
			for _, d := range tc.ticks {
				c.SetTime(start.Add(d))
				w.check(context.Background(), rep, eng, start, c.Now())
			}
			if p.writes != tc.want {
				t.Fatalf("%d writes, want %d: %v", p.writes, tc.want, p.bodies)
			}
			if tc.want == 0 {
				return
			}
			got := podCondition(&p.pod, protocol.ConditionResult)
			if got == nil || !got.LastTransitionTime.Time.Equal(start) {
				t.Errorf("result condition %+v: its time must be when the result was read", got)
			}
			if has := podCondition(&p.pod, protocol.ConditionProgress) != nil; has != tc.progress {
				t.Errorf("progress written: %v, want %v (%v)", has, tc.progress, p.bodies)
			}
		})
	}
}

func podCondition(pod *corev1.Pod, typ string) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if string(pod.Status.Conditions[i].Type) == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// The run loop: an agent that printed its result and keeps its output open
// gets the Result condition, dated when the result was read, once the clock
// passed resultQuiet; the Finished summary still follows on SIGTERM.
func TestRunResultThenHang(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	p := &syncPatcher{p: &podPatcher{t: t}}
	src := &scriptedSource{lines: healthyTurn(), hold: make(chan struct{})}
	r := testRunner(t, src, p, clk)
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	time.Sleep(50 * time.Millisecond) // ten ticks inside the quiet time: nothing said
	if c, _ := p.conditions(); c[protocol.ConditionResult].Type != "" {
		t.Fatalf("Result written within resultQuiet: %+v", c[protocol.ConditionResult])
	}
	clk.SetTime(t0.Add(resultQuiet + time.Second))
	p.waitFor(t, "the Result condition", has(protocol.ConditionResult))
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := p.conditions()
	if c := got[protocol.ConditionResult]; !c.LastTransitionTime.Time.Equal(t0) || c.Reason != protocol.ReasonResult {
		t.Errorf("Result %s at %v, want %s at %v (when the result was read)", c.Reason, c.LastTransitionTime, protocol.ReasonResult, t0)
	}
	if c := got[protocol.ConditionFinished]; c.Reason != protocol.ReasonResult {
		t.Errorf("Finished = %s/%s", c.Reason, c.Message)
	}
}
