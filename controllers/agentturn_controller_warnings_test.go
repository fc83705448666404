package controllers

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Every Pod warning the sidecar sets is a turn condition the API names.
func TestWarningsNamed(t *testing.T) {
	named := []string{twv1.TurnConditionDeltasHidden, twv1.TurnConditionHooksNotRun,
		twv1.TurnConditionCostMismatch, twv1.TurnConditionFormatMismatch, twv1.TurnConditionLogRotated}
	for _, w := range protocol.Warnings {
		if !slices.Contains(named, w.Reason) {
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
		protocol.ReasonDeltasHidden:   "the stream shows no deltas: degeneration, repetition and a stall inside a message cannot be seen; fix: run claude with --include-partial-messages",
		protocol.ReasonHooksNotRun:    hooksNotRunText,
		protocol.ReasonCostMismatch:   "line 19: a total cost of $9223372.036854775807 or more is more than 9 model messages can cost ($510.30): not counted",
		protocol.ReasonFormatMismatch: "20 of 20 lines do not read as format codex; they read as claude: set spec.format to claude (or auto)",
		protocol.ReasonLogRotated:     "the kubelet rotated the agent's log past the line of 2026-12-06T22:00:00.1Z the sidecar was reading (12.5s behind; the log now starts at 2026-12-06T22:00:04Z): lines may have been rotated away unread",
	}
	for i, w := range protocol.Warnings {
		name := fmt.Sprintf("warned-%d", i)
		counted := promtestutil.ToFloat64(shared.WarningsTotal.WithLabelValues(w.Reason, ""))
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
		if d := promtestutil.ToFloat64(shared.WarningsTotal.WithLabelValues(w.Reason, "")) - counted; d < 1 {
			t.Errorf("turnwatch_warnings_total{reason=%q} rose by %v", w.Reason, d)
		}
	}
}

// A turn whose sidecar reports a lower final cost than it reported while
// the turn ran (a forged result's total_cost_usd of 0, a summary written
// by hand) settles with the higher figure, in its status and in its
// policy's ledger, and notes CostMismatch with one Warning Event.
func TestLowerFinalCostKeepsTheHigher(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	budgetPolicy(t, ns, "1000", "24h")
	sum := protocol.Summary{Progress: counts(4, "0"), StopReason: "end", Result: true, Lines: 20, Complete: true}
	for i, report := range []func(run *twv1.AgentRun, turn string){
		func(run *twv1.AgentRun, turn string) { reportTurnCost(t, run, turn, "50.00") }, // on the run, as the sidecar does
		func(run *twv1.AgentRun, turn string) { // on the Pod, as a sidecar without a run does
			playSidecar(t, ns, turn, condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":3,"costUSD":"50.00"}`))
		},
	} {
		name := fmt.Sprintf("lower-%d", i)
		run := newRun(ns, name)
		runningRun(t, run)
		report(run, name+"-0")
		eventually(t, "the report is seen", func() error {
			r, err := getRun(ns, name)
			if err == nil && r.Status.CostUSD != "50.00" {
				err = fmt.Errorf("run cost %q", r.Status.CostUSD)
			}
			return err
		})
		playSidecar(t, ns, name+"-0", finishedCond(sum))
		turn := turnSettled(t, ns, name+"-0")
		if turn.Status.Outcome != twv1.TurnSucceeded || turn.Status.CostUSD != "50.00" || turn.Status.Steps != 4 {
			t.Errorf("%s settled %s with %d steps and $%s, want Succeeded, 4 and $50.00", name, turn.Status.Outcome, turn.Status.Steps, turn.Status.CostUSD)
		}
		c := meta.FindStatusCondition(turn.Status.Conditions, twv1.TurnConditionCostMismatch)
		if c == nil || containsAll(c.Message, "$0.00", "the turn keeps $50.00") != nil {
			t.Errorf("%s: CostMismatch %+v", name, c)
		}
		evs := waitEvents(t, ns, name, protocol.ReasonCostMismatch, 1)
		if evs[0].Type != corev1.EventTypeWarning {
			t.Errorf("event %s %q", evs[0].Type, evs[0].Note)
		}
		runPhase(t, ns, name, twv1.RunSucceeded)
	}
	eventually(t, "the ledger counts the higher figures", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		return ledgerIs("100.00", 2, 0)(p)
	})
	consistently(t, "one CostMismatch event per run", 500*time.Millisecond, func() error {
		for i := range 2 {
			if evs, _ := runEvents(ns, fmt.Sprintf("lower-%d", i), protocol.ReasonCostMismatch); len(evs) != 1 {
				return fmt.Errorf("lower-%d: %d events", i, len(evs))
			}
		}
		return nil
	})
}

// hooksNotRunText is the sidecar's HooksNotRun message, as an envtest
// sidecar plays it.
const hooksNotRunText = "no turnwatch hook ran in this turn although tool calls ran: nudges cannot reach the model"
