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
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
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
			agentturn.MarkWarnings(st, tt.had, 1, now.Add(-time.Minute))
			if got := agentturn.MarkWarnings(st, tt.warnings, 1, now); !slices.Equal(got, tt.added) {
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
	named := []string{twv1.TurnConditionDeltasHidden, twv1.TurnConditionHooksNotRun,
		twv1.TurnConditionCostMismatch, twv1.TurnConditionFormatMismatch, twv1.TurnConditionLogRotated}
	for _, w := range protocol.Warnings {
		if !slices.Contains(named, w.Reason) {
			t.Errorf("warning %s has no AgentTurn condition constant", w.Reason)
		}
	}
}

// A turn's counts only grow: a report below what the turn counted (its
// own status, its run's progress, its Pod's Progress) leaves the higher
// figure, and the turn notes CostMismatch unless the sidecar did. The
// run's progress is raised into the turn as it settles, not per report.
func TestRaiseCounts(t *testing.T) {
	const uid = "turn-uid"
	tests := []struct {
		name           string
		had            twv1.AgentTurnStatus
		held, progress *protocol.Progress
		latest         *protocol.Progress
		sidecarNote    string
		steps          int64
		cost, note     string
	}{
		{"nothing reported", twv1.AgentTurnStatus{}, nil, nil, nil, "", 0, "", ""},
		{"a summary past the progress", twv1.AgentTurnStatus{}, nil, ptrTo(counts(3, "10")), ptrTo(counts(4, "12")), "", 4, "12.00", ""},
		{"a summary below the Pod's progress", twv1.AgentTurnStatus{}, nil, ptrTo(counts(3, "50")), ptrTo(counts(4, "0")), "", 4, "50.00",
			"the sidecar reported $0.00 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"a summary below the run's progress", twv1.AgentTurnStatus{}, ptrTo(counts(3, "50")), nil, ptrTo(counts(3, "0")), "", 3, "50.00",
			"the sidecar reported $0.00 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"a summary below the turn's own", twv1.AgentTurnStatus{Steps: 2, CostUSD: "50.00"}, nil, nil, ptrTo(counts(1, "0.5")), "", 2, "50.00",
			"the sidecar reported $0.50 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"fewer steps, more cost", twv1.AgentTurnStatus{Steps: 5, CostUSD: "1"}, nil, nil, ptrTo(counts(4, "2")), "", 5, "2.00", ""},
		{"while it runs, the run's progress stays in the run's status", twv1.AgentTurnStatus{}, ptrTo(counts(3, "50")), nil, nil, "", 0, "", ""},
		{"the sidecar's own note stands", twv1.AgentTurnStatus{}, nil, ptrTo(counts(3, "50")), ptrTo(counts(3, "0")), "line 9 reported $0.00", 3, "50.00",
			"line 9 reported $0.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &agentturn.AgentTurnReconciler{}
			r.Counts.Observe(uid, tt.held)
			st := tt.had.DeepCopy()
			v := agentturn.Verdict{Progress: tt.progress, Counts: tt.latest}
			if tt.latest != nil {
				v.Outcome = twv1.TurnSucceeded // a summary settles the turn
			}
			if tt.sidecarNote != "" {
				v.Warnings = map[string]string{protocol.ReasonCostMismatch: tt.sidecarNote}
			}
			r.RaiseCounts(uid, st, &v)
			if st.Steps != tt.steps || st.CostUSD != tt.cost {
				t.Errorf("counts %d %s, want %d %s", st.Steps, st.CostUSD, tt.steps, tt.cost)
			}
			if got := v.Warnings[protocol.ReasonCostMismatch]; got != tt.note {
				t.Errorf("note %q, want %q", got, tt.note)
			}
		})
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
