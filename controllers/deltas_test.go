package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestMarkDeltasHidden(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	const msg = "the stream shows no deltas: degeneration cannot be seen"
	tests := []struct {
		name    string
		message string
		had     bool
		added   bool
	}{
		{"no report", "", false, false},
		{"first report", msg, false, true},
		{"already set", msg, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &twv1.AgentTurnStatus{}
			if tt.had {
				markDeltasHidden(st, msg, 1, now.Add(-time.Minute))
			}
			if got := markDeltasHidden(st, tt.message, 1, now); got != tt.added {
				t.Errorf("added %v, want %v", got, tt.added)
			}
			c := meta.FindStatusCondition(st.Conditions, twv1.TurnConditionDeltasHidden)
			if (c != nil) != (tt.message != "") {
				t.Fatalf("condition %+v for message %q", c, tt.message)
			}
			if c != nil && (c.Message != msg || (tt.had && !c.LastTransitionTime.Time.Before(now))) {
				t.Errorf("condition %+v: want the first report's, kept", c)
			}
		})
	}
}

// A stream that hides its deltas: the turn's condition and one Warning
// Event on the run, however often the sidecar's condition is read again;
// the run goes on.
func TestDeltasHiddenTold(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "blind"))
	waitPod(t, ns, "blind-0")
	const msg = "the stream shows no deltas: degeneration, repetition and a stall inside a message cannot be seen; fix: run claude with --include-partial-messages"
	playSidecar(t, ns, "blind-0", condition(protocol.ConditionDeltasHidden, protocol.ReasonDeltasHidden, msg))
	evs := waitEvents(t, ns, "blind", EventDeltasHidden, 1)
	if err := containsAll(evs[0].Note, "blind-0", "--include-partial-messages"); err != nil || evs[0].Type != corev1.EventTypeWarning {
		t.Errorf("event %s %q: %v", evs[0].Type, evs[0].Note, err)
	}
	playSidecar(t, ns, "blind-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":3,"costUSD":"0.1"}`))
	consistently(t, "one Warning, the run goes on", 700*time.Millisecond, func() error {
		if evs, _ := runEvents(ns, "blind", EventDeltasHidden); len(evs) != 1 {
			return fmt.Errorf("%d DeltasHidden events", len(evs))
		}
		if pod, _ := getPod(ns, "blind-0"); pod.Spec.ActiveDeadlineSeconds != nil {
			return errors.New("a blind stream stopped the agent")
		}
		return nil
	})
	turn, _ := getTurn(ns, "blind-0")
	c := meta.FindStatusCondition(turn.Status.Conditions, twv1.TurnConditionDeltasHidden)
	if c == nil || c.Status != "True" || c.Message != msg || turn.Status.Outcome != "" {
		t.Errorf("turn status %+v", turn.Status)
	}
}
