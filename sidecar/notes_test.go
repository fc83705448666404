package sidecar

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// realStream is a real CLI's recorded stream (pkg/monitor/testdata/real).
func realStream(t *testing.T, name string) []string {
	return recorded(t, "../pkg/monitor/testdata/real/"+name)
}

// A claude stream whose final result says total_cost_usd 0 after its
// messages were priced: the summary keeps the priced cost, and
// CostMismatch rides with it (no write of its own).
func TestRunKeepsTheHigherCost(t *testing.T) {
	lines := realStream(t, "claude/healthy.jsonl")
	zero := regexp.MustCompile(`"total_cost_usd":[0-9.e-]+`)
	for i, l := range lines {
		if strings.Contains(l, `"type":"result"`) {
			lines[i] = zero.ReplaceAllString(l, `"total_cost_usd":0`)
		}
	}
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, &scriptedSource{lines: lines}, p, clock.RealClock{})
	runUntil(t, r, p, has(protocol.ConditionFinished))
	got, _ := p.conditions()
	var sum protocol.Summary
	if err := json.Unmarshal([]byte(got[protocol.ConditionFinished].Message), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.CostUSD() != "0.0078" || !sum.Result {
		t.Errorf("summary %s, want the priced $0.0078 and the result", got[protocol.ConditionFinished].Message)
	}
	c := got[protocol.ConditionCostMismatch]
	if c.Status != corev1.ConditionTrue || c.Reason != protocol.ReasonCostMismatch || !strings.Contains(c.Message, "the turn keeps $0.0078") {
		t.Errorf("CostMismatch = %+v", c)
	}
	for _, body := range p.p.bodies {
		if strings.Contains(body, protocol.ConditionCostMismatch) && !strings.Contains(body, protocol.ConditionFinished) {
			t.Errorf("CostMismatch went out in a write of its own: %s", body)
		}
	}
}

// A looping claude stream read as codex: FormatMismatch, naming claude, is
// written while the agent still runs, once, in a write of its own.
func TestRunTellsFormatMismatch(t *testing.T) {
	p := &syncPatcher{p: &podPatcher{t: t}}
	hold := make(chan struct{})
	r := testRunner(t, &scriptedSource{lines: realStream(t, "claude/identicalLoop.jsonl"), hold: hold}, p, clock.RealClock{})
	r.cfg.Format = monitor.FormatCodex
	ctxDone := make(chan struct{})
	go func() {
		p.waitFor(t, "FormatMismatch", has(protocol.ConditionFormatMismatch))
		close(ctxDone)
		close(hold) // the agent ends
	}()
	runUntil(t, r, p, has(protocol.ConditionFinished))
	<-ctxDone
	got, _ := p.conditions()
	c := got[protocol.ConditionFormatMismatch]
	if c.Status != corev1.ConditionTrue || c.Reason != protocol.ReasonFormatMismatch || !strings.Contains(c.Message, "set spec.format to claude") {
		t.Errorf("FormatMismatch = %+v", c)
	}
	writes := 0
	for _, body := range p.p.bodies {
		if strings.Contains(body, protocol.ConditionFormatMismatch) {
			writes++
			if strings.Contains(body, protocol.ConditionFinished) {
				t.Errorf("FormatMismatch waited for the summary: %s", body)
			}
		}
	}
	if writes != 1 {
		t.Errorf("FormatMismatch written %d times, want once", writes)
	}
}
