package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// getPolicy reads a TurnPolicy straight from the API server.
func getPolicy(ns, name string) (*twv1.TurnPolicy, error) {
	p := &twv1.TurnPolicy{}
	return p, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, p)
}

// reportTurnCost plays the sidecar's progress report of a run's turn.
func reportTurnCost(t *testing.T, run *twv1.AgentRun, turn, cost string) {
	t.Helper()
	got, err := getRun(run.Namespace, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	body := withRunUID(progressBody(3, cost, turn, 3, cost), string(got.UID))
	if err := reportProgress(k8s, run.Namespace, run.Name, body); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetStopsRunningTurnAndHoldsNext(t *testing.T) {
	needEnv(t)
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
	run := newRun(ns, "r1")
	runningRun(t, run)
	turn, err := getTurn(ns, "r1-0")
	if err != nil || !controllerutil.ContainsFinalizer(turn, twv1.BudgetFinalizer) {
		t.Fatalf("turn r1-0 finalizers %v (%v)", turn.Finalizers, err)
	}
	reportTurnCost(t, run, "r1-0", "0.60")
	consistently(t, "the running part waits for the progress period", time.Second, func() error {
		p, err := getPolicy(ns, "team")
		if err == nil && p.Status.Budget.SpentUSD != "0.00" {
			err = fmt.Errorf("spent %s, refreshed within the period", p.Status.Budget.SpentUSD)
		}
		return err
	})
	passed := time.Now()
	reportTurnCost(t, run, "r1-0", "1.50")
	podStopped(t, ns, "r1-0")
	if took := time.Since(passed); took > shared.ProgressPeriod(shared.DefaultConfig().Freshness()) {
		t.Errorf("stopped %v after the total passed the budget, more than one progress period", took)
	}
	settled := turnSettled(t, ns, "r1-0")
	e := settled.Status.Error
	if e == nil || e.Type != twv1.ClassOverspend || e.Detector != twv1.DetectorBudget {
		t.Fatalf("turn error %+v, want overspend by budget", e)
	}
	if err := containsAll(e.Message, "TurnPolicy/team", "spent 1.50 of 1.00 USD"); err != nil {
		t.Error(err)
	}
	faulted := runPhase(t, ns, "r1", twv1.RunFaulted)
	if f := faulted.Status.Fault; f.Class != twv1.ClassOverspend || f.Detector != twv1.DetectorBudget {
		t.Errorf("fault %+v", f)
	}
	if c := meta.FindStatusCondition(faulted.Status.Conditions, agentrun.ConditionFaulted); c == nil ||
		containsAll(c.Message, "overspend (budget)", "TurnPolicy/team", "not rerolled") != nil {
		t.Errorf("Faulted condition %+v", c)
	}
	waitEvents(t, ns, "r1", agentrun.EventBudgetExhausted, 1)
	eventually(t, "counted once and let go", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		if err := ledgerIs("1.50", 1, 0)(p); err != nil {
			return err
		}
		return noneHeld(ns)
	})

	create(t, newRun(ns, "r2"))
	held := func() error {
		r2, err := getRun(ns, "r2")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(r2.Status.Conditions, twv1.PolicyConditionBudgetExhausted)
		if r2.Status.Phase != twv1.RunPending || c == nil || c.Status != "True" {
			return fmt.Errorf("phase %s, condition %+v", r2.Status.Phase, c)
		}
		if names, _ := turnNames(ns, "r2"); len(names) != 0 {
			return fmt.Errorf("turns %v", names)
		}
		return containsAll(c.Message, "first turn waits", "TurnPolicy/team", "spent 1.50 of 1.00 USD")
	}
	eventually(t, "r2 waits for the budget", held)
	consistently(t, "r2 keeps waiting", 2*time.Second, held)
	waitEvents(t, ns, "r2", agentrun.EventBudgetExhausted, 1)

	p, err := getPolicy(ns, "team")
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Budget.MaxCostUSD = "5"
	if err := k8s.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "r2-0")
	r2 := runPhase(t, ns, "r2", twv1.RunRunning)
	if meta.FindStatusCondition(r2.Status.Conditions, twv1.PolicyConditionBudgetExhausted) != nil {
		t.Error("the hold stayed after the budget was raised")
	}
}

func TestBudgetCountsTurnOfDeletedRun(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	budgetPolicy(t, ns, "10", "24h")
	run := newRun(ns, "r")
	runningRun(t, run)
	reportTurnCost(t, run, "r-0", "0.40")
	if err := k8s.Delete(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the aborted turn is counted once and let go", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		if err := ledgerIs("0.40", 1, 0)(p); err != nil {
			return err
		}
		if p.Status.Budget.SpentUSD != "0.40" {
			return fmt.Errorf("spent %s", p.Status.Budget.SpentUSD)
		}
		return noneHeld(ns)
	})
	// envtest has no garbage collector: delete the turn as it would.
	if err := k8s.DeleteAllOf(context.Background(), &twv1.AgentTurn{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	consistently(t, "still counted once", 2*time.Second, func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		return ledgerIs("0.40", 1, 0)(p)
	})
}
