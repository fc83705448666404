package sidecar

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A claude stream without stream_event deltas (no --include-partial-messages)
// gets the DeltasHidden condition once, naming the flag, in the same write
// as its summary (it costs no write of its own); the turn is not stopped.
func TestRunTellsDeltasHidden(t *testing.T) {
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, &scriptedSource{lines: healthyTurn()}, p, clock.RealClock{})
	runUntil(t, r, p, has(protocol.ConditionFinished))
	got, _ := p.conditions()
	c, ok := got[protocol.ConditionDeltasHidden]
	if !ok || c.Status != corev1.ConditionTrue || c.Reason != protocol.ReasonDeltasHidden || !strings.Contains(c.Message, "--include-partial-messages") {
		t.Fatalf("DeltasHidden = %+v (present %v)", c, ok)
	}
	if _, tripped := got[protocol.ConditionTripped]; tripped {
		t.Error("a blind stream tripped")
	}
	writes := 0
	for _, body := range p.p.bodies {
		if strings.Contains(body, protocol.ConditionDeltasHidden) {
			writes++
			if !strings.Contains(body, protocol.ConditionFinished) {
				t.Errorf("DeltasHidden went out in a write of its own: %s", body)
			}
		}
	}
	if writes != 1 {
		t.Errorf("DeltasHidden written %d times, want once", writes)
	}
}
