package sidecar

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Every nudge streak is written (its message names the streak), and a
// restarted sidecar replaying the same streaks writes none of them again.
func TestEveryNudgeStreakIsWritten(t *testing.T) {
	p := &podPatcher{t: t}
	c := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	ctx := context.Background()
	const text = "13 tool-only model messages since the agent last spoke"
	r := newTestReporter(t, p, c)
	for streak := 1; streak <= 3; streak++ {
		if err := r.silent(ctx, detectorSilentRun, text); err != nil {
			t.Fatal(err)
		}
		if got := silentMessage(p); got != protocol.NudgeMessage(streak, text) {
			t.Fatalf("after streak %d the Silent condition says %q", streak, got)
		}
	}
	if p.writes != 3 {
		t.Fatalf("%d writes for 3 streaks", p.writes)
	}
	again := newTestReporter(t, p, c)
	for range 3 {
		if err := again.silent(ctx, detectorSilentRun, text); err != nil {
			t.Fatal(err)
		}
	}
	if p.writes != 3 || silentMessage(p) != protocol.NudgeMessage(3, text) {
		t.Fatalf("the restarted sidecar rewrote the nudges: %d writes, %q", p.writes, silentMessage(p))
	}
	if err := again.silent(ctx, detectorSilentRun, text); err != nil || silentMessage(p) != protocol.NudgeMessage(4, text) {
		t.Fatalf("a fourth streak after the restart: %v %q", err, silentMessage(p))
	}
}

func silentMessage(p *podPatcher) string {
	for _, c := range p.pod.Status.Conditions {
		if string(c.Type) == protocol.ConditionSilent {
			return c.Message
		}
	}
	return ""
}
