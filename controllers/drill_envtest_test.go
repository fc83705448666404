package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Drill runs started at once each get their own port; one drill's story,
// told by a sidecar as a real one would, ends in status.drill once the last
// turn's late reports had their time, told as a drill in its Event and
// metrics.
func TestDrillRuns(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk})
	const runs = 12
	for i := range runs {
		create(t, newRun(ns, fmt.Sprintf("d%d", i), func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Drill = twv1.FormatClaude, &twv1.Drill{Scenario: "identicalLoop"}
		}))
	}
	ports := map[string]string{}
	for i := range runs {
		pod := waitPod(t, ns, fmt.Sprintf("d%d-0", i))
		p := pod.Labels[twv1.LabelModelPort]
		if other, dup := ports[p]; dup || p == "" {
			t.Errorf("pods %s and %s: port %q", other, pod.Name, p)
		}
		ports[p] = pod.Name
		if got := envOf(pod.Spec.Containers[0])["ANTHROPIC_BASE_URL"]; got != "http://127.0.0.1:"+p {
			t.Errorf("%s: ANTHROPIC_BASE_URL %q", pod.Name, got)
		}
	}
	if run, _ := getRun(ns, "d0"); run.Labels[twv1.LabelDrill] != "identicalLoop" {
		t.Errorf("run labels %v", run.Labels)
	}

	served := func(fresh bool) func(*corev1.PodStatus) {
		return condition(protocol.ConditionDrill, protocol.ReasonDrillServed, protocol.Marshal(protocol.DrillReport{Scenario: "identicalLoop", Requests: 5, Fresh: fresh}))
	}
	for _, name := range []string{"d0-0", "d0-1"} {
		waitPod(t, ns, name)
		playSidecar(t, ns, name, served(true))
		playSidecar(t, ns, name, condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":4,"costUSD":"0.01"}`))
		playSidecar(t, ns, name, trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
		if name == "d0-0" {
			playSidecar(t, ns, name, condition(protocol.ConditionCallRefused, protocol.ReasonCallRefused, "toolu_4"))
		}
	}
	run := runPhase(t, ns, "d0", twv1.RunFaulted)
	if d := run.Status.Drill; d == nil || d.Result != twv1.DrillPending || d.Expected.Detector != monitor.DetectorIdenticalCalls {
		t.Fatalf("drill status before the late reports: %+v", d)
	}
	// The last turn's refusal comes after the trip that ended the run.
	clk.Step(agentrun.DrillSettle)
	playSidecar(t, ns, "d0-1", condition(protocol.ConditionCallRefused, protocol.ReasonCallRefused, "toolu_8"))
	eventually(t, "the drill's result", func() error {
		run, err := getRun(ns, "d0")
		if err != nil || run.Status.Drill == nil || run.Status.Drill.Result != twv1.DrillCaught {
			return fmt.Errorf("%+v %v", run.Status.Drill, err)
		}
		d := run.Status.Drill
		if d.AtCall != 4 || d.CallRefused == nil || !*d.CallRefused || d.RerollFresh == nil || !*d.RerollFresh {
			return fmt.Errorf("%+v", d)
		}
		return nil
	})
	ev := waitEvents(t, ns, "d0", agentrun.EventDrill+string(twv1.DrillCaught), 1)
	if !strings.HasPrefix(ev[0].Note, "drill identicalLoop: ") {
		t.Errorf("DrillCaught note %q", ev[0].Note)
	}
	for _, reason := range []string{agentrun.EventFaulted, agentrun.EventRerolled} {
		for _, e := range waitEvents(t, ns, "d0", reason, 1) {
			if !strings.HasPrefix(e.Note, "drill identicalLoop: ") {
				t.Errorf("%s note %q does not say it is a drill", reason, e.Note)
			}
		}
	}
	// Once every turn's Pod is over, no sidecar has a report left: the
	// result need not wait (the clock stands still from here).
	for _, name := range []string{"d1-0", "d1-1"} {
		waitPod(t, ns, name)
		playSidecar(t, ns, name, served(true))
		playSidecar(t, ns, name, trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
		turnSettled(t, ns, name)
		playSidecar(t, ns, name, agentExited(137, "Error", corev1.PodFailed))
	}
	eventually(t, "the result once the Pods are over", func() error {
		run, err := getRun(ns, "d1")
		if err != nil || run.Status.Drill == nil || run.Status.Drill.Result != twv1.DrillCaught {
			return fmt.Errorf("%+v %v", run.Status.Drill, err)
		}
		if d := run.Status.Drill; d.CallRefused == nil || *d.CallRefused {
			return fmt.Errorf("refused %v, want no", d.CallRefused)
		}
		return nil
	})
	if v := promtestutil.ToFloat64(shared.TripsTotal.WithLabelValues(monitor.DetectorIdenticalCalls, "runaway", "identicalLoop", shared.ModeEnforce)); v < 2 {
		t.Errorf("drill trips %v", v)
	}
	if v := promtestutil.ToFloat64(shared.CostByNamespace.WithLabelValues(ns)); v != 0 {
		t.Errorf("a drill's cost counted in the namespace's spend: %v", v)
	}
}

// A drill is a run (docs/drill.md#budgets): in a namespace with a budget a
// drill's turn holds the budget finalizer and its cost counts once; a
// drill that spends past the budget is stopped as overspend; and a drill
// created while the budget is spent is held, with no turn, so that
// spec.drill carries no agent past a budget.
func TestDrillHeldByBudget(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	budgetPolicy(t, ns, "1", "24h")
	eventually(t, "the window opens", func() error {
		p, err := getPolicy(ns, "team")
		if err == nil && p.Status.Budget == nil {
			err = fmt.Errorf("no ledger")
		}
		return err
	})
	drill := func(name, scenario string) *twv1.AgentRun {
		return newRun(ns, name, func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Drill = twv1.FormatClaude, &twv1.Drill{Scenario: scenario}
		})
	}
	runningRun(t, drill("healthy", "healthy"))
	if turn, err := getTurn(ns, "healthy-0"); err != nil || !controllerutil.ContainsFinalizer(turn, twv1.BudgetFinalizer) {
		t.Fatalf("a drill's turn holds %v (%v), want the budget finalizer", turn.Finalizers, err)
	}
	playSidecar(t, ns, "healthy-0", finishedCond(protocol.Summary{Progress: counts(2, "0.03"), StopReason: "end", Result: true}))
	runPhase(t, ns, "healthy", twv1.RunSucceeded)
	eventually(t, "the drill's turn counted once and let go", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		if err := ledgerIs("0.03", 1, 0)(p); err != nil {
			return err
		}
		return noneHeld(ns)
	})

	spender := drill("spender", "identicalLoop")
	runningRun(t, spender)
	reportTurnCost(t, spender, "spender-0", "1.50")
	podStopped(t, ns, "spender-0")
	if e := turnSettled(t, ns, "spender-0").Status.Error; e == nil || e.Type != twv1.ClassOverspend || e.Detector != twv1.DetectorBudget {
		t.Fatalf("the drill's turn error %+v, want overspend by budget", e)
	}
	eventually(t, "both drills counted once", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		return ledgerIs("1.53", 2, 0)(p)
	})

	create(t, drill("held", "healthy"))
	held := func() error {
		run, err := getRun(ns, "held")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(run.Status.Conditions, twv1.PolicyConditionBudgetExhausted)
		if run.Status.Phase != twv1.RunPending || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("phase %s, condition %+v", run.Status.Phase, c)
		}
		if names, _ := turnNames(ns, "held"); len(names) != 0 {
			return fmt.Errorf("turns %v", names)
		}
		return containsAll(c.Message, "first turn waits", "TurnPolicy/team", "spent 1.53 of 1.00 USD")
	}
	eventually(t, "a drill waits for the budget", held)
	consistently(t, "and keeps waiting", 2*time.Second, held)
}
