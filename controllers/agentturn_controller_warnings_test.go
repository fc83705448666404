package controllers

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestMarkWarnings(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	const blind, hooks = "the stream shows no deltas: degeneration cannot be seen", "no turnwatch hook ran"
	tests := []struct {
		name     string
		warnings map[string]string
		had      map[string]string
		added    []string
	}{
		{"no report", nil, nil, nil},
		{"first report", map[string]string{twv1.TurnConditionDeltasHidden: blind}, nil, []string{twv1.TurnConditionDeltasHidden}},
		{"already set", map[string]string{twv1.TurnConditionDeltasHidden: blind}, map[string]string{twv1.TurnConditionDeltasHidden: blind}, nil},
		{"both, in the table's order", map[string]string{twv1.TurnConditionHooksNotRun: hooks, twv1.TurnConditionDeltasHidden: blind}, nil,
			[]string{twv1.TurnConditionDeltasHidden, twv1.TurnConditionHooksNotRun}},
		{"one new beside one set", map[string]string{twv1.TurnConditionHooksNotRun: hooks, twv1.TurnConditionDeltasHidden: blind},
			map[string]string{twv1.TurnConditionDeltasHidden: blind}, []string{twv1.TurnConditionHooksNotRun}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &twv1.AgentTurnStatus{}
			markWarnings(st, tt.had, 1, now.Add(-time.Minute))
			if got := markWarnings(st, tt.warnings, 1, now); !slices.Equal(got, tt.added) {
				t.Errorf("added %v, want %v", got, tt.added)
			}
			for reason, msg := range tt.warnings {
				c := meta.FindStatusCondition(st.Conditions, reason)
				if c == nil || c.Message != msg || (tt.had[reason] != "" && !c.LastTransitionTime.Time.Before(now)) {
					t.Errorf("condition %+v: want the first report's, kept", c)
				}
			}
		})
	}
}

// Every Pod warning the sidecar sets is a turn condition the API names.
func TestWarningsNamed(t *testing.T) {
	for _, w := range protocol.Warnings {
		if w.Reason != twv1.TurnConditionDeltasHidden && w.Reason != twv1.TurnConditionHooksNotRun && w.Reason != twv1.TurnConditionLogRotated {
			t.Errorf("warning %s has no AgentTurn condition constant", w.Reason)
		}
	}
}

// Each of the sidecar's warnings (a stream that hides its deltas, no hook
// run, a lag past a log rotation): the turn's condition and one Warning Event on the run, however
// often the sidecar's condition is read again; the run goes on.
func TestWarningsTold(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	msgs := map[string]string{
		protocol.ReasonDeltasHidden: "the stream shows no deltas: degeneration, repetition and a stall inside a message cannot be seen; fix: run claude with --include-partial-messages",
		protocol.ReasonHooksNotRun:  hooksNotRunText,
		protocol.ReasonLogRotated:   "the kubelet rotated the agent's log past the line of 2026-12-06T22:00:00.1Z the sidecar was reading (12.5s behind; the log now starts at 2026-12-06T22:00:04Z): lines may have been rotated away unread",
	}
	for i, w := range protocol.Warnings {
		name := fmt.Sprintf("warned-%d", i)
		create(t, newRun(ns, name))
		waitPod(t, ns, name+"-0")
		msg := msgs[w.Reason]
		playSidecar(t, ns, name+"-0", condition(w.Condition, w.Reason, msg))
		evs := waitEvents(t, ns, name, w.Reason, 1)
		if evs[0].Note != "turn "+name+"-0: "+msg || evs[0].Type != corev1.EventTypeWarning {
			t.Errorf("event %s %q", evs[0].Type, evs[0].Note)
		}
		playSidecar(t, ns, name+"-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":3,"costUSD":"0.1"}`))
		consistently(t, "one Warning, the run goes on", 700*time.Millisecond, func() error {
			if evs, _ := runEvents(ns, name, w.Reason); len(evs) != 1 {
				return fmt.Errorf("%d %s events", len(evs), w.Reason)
			}
			if pod, _ := getPod(ns, name+"-0"); pod.Spec.ActiveDeadlineSeconds != nil {
				return errors.New("a warning stopped the agent")
			}
			return nil
		})
		turn, _ := getTurn(ns, name+"-0")
		c := meta.FindStatusCondition(turn.Status.Conditions, w.Reason)
		if c == nil || c.Status != "True" || c.Message != msg || turn.Status.Outcome != "" {
			t.Errorf("turn status %+v", turn.Status)
		}
	}
}

// hooksNotRunText is the sidecar's HooksNotRun message, as an envtest
// sidecar plays it.
const hooksNotRunText = "no turnwatch hook ran in this turn although tool calls ran: nudges cannot reach the model"
