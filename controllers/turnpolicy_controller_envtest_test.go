package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// The ledger's correctness with faults injected (docs/policies.md#the-ledger):
// each policy reconciler here is one manager process, with its own cache
// of the API server; a restart is a new one, two managers in a rollout are
// two of them.

// ledgerProcess is a policy reconciler with its own cache; funcs intercept
// its client (a crash, a stale cache).
func ledgerProcess(t *testing.T, ns string, clk clock.PassiveClock, funcs interceptor.Funcs) *turnpolicy.TurnPolicyReconciler {
	t.Helper()
	c, err := cache.New(restConfig, cache.Options{Scheme: testScheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	for _, obj := range []client.Object{&twv1.TurnPolicy{}, &twv1.ClusterTurnPolicy{}, &twv1.AgentTurn{}, &twv1.AgentRun{}, &corev1.Namespace{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	cl, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return &turnpolicy.TurnPolicyReconciler{Client: interceptor.NewClient(cl, funcs), APIReader: k8s, Clock: clk, Config: shared.DefaultConfig()}
}

// crashBeforeRelease fails every finalizer removal: the process dies
// between step 1 (counted) and step 2 (finalizer removed).
var crashBeforeRelease = interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*twv1.AgentTurn); ok {
		return errors.New("the manager stopped")
	}
	return c.Patch(ctx, obj, p, opts...)
}}

func budgetPolicy(t *testing.T, ns, max, window string) *twv1.TurnPolicy {
	t.Helper()
	p := &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: twv1.TurnPolicySpec{Budget: &twv1.Budget{MaxCostUSD: max, Window: window}}}
	create(t, p)
	return p
}

// budgetTurn makes a turn holding the budget finalizer; with an outcome it
// is settled at `at` with cost.
func budgetTurn(t *testing.T, ns, name, cost string, outcome twv1.TurnOutcome, at time.Time, labels map[string]string) *twv1.AgentTurn {
	t.Helper()
	turn := &twv1.AgentTurn{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Finalizers: []string{twv1.BudgetFinalizer}},
		Spec:       twv1.AgentTurnSpec{RunName: "run-" + name, Prompt: "p", ConversationID: "c"},
	}
	create(t, turn)
	turn.Status = twv1.AgentTurnStatus{Outcome: outcome, CostUSD: cost}
	if outcome != "" {
		turn.Status.CompletionTime = shared.PtrTime(metav1.NewTime(at))
	}
	if err := k8s.Status().Update(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	return turn
}

// pass runs reconciles until cond holds (each pass may meet a conflict or
// a cache not caught up yet, as a controller's retries would).
func pass(t *testing.T, r *turnpolicy.TurnPolicyReconciler, p client.Object, what string, cond func(*twv1.TurnPolicy) error) {
	t.Helper()
	eventually(t, what, func() error {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			return err
		}
		got := &twv1.TurnPolicy{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		return cond(got)
	})
}

// ledgerIs checks the settled figures and how many entries are listed.
func ledgerIs(settled string, turns int64, counting int) func(*twv1.TurnPolicy) error {
	return func(p *twv1.TurnPolicy) error {
		b := p.Status.Budget
		if b == nil {
			return errors.New("no ledger yet")
		}
		if b.SettledUSD != settled || b.Turns != turns || len(b.Counting) != counting {
			return fmt.Errorf("ledger %s in %d turns, %d listed; want %s in %d, %d listed", b.SettledUSD, b.Turns, len(b.Counting), settled, turns, counting)
		}
		return nil
	}
}

// noneHeld checks that no turn of ns holds the budget finalizer.
func noneHeld(ns string) error {
	var list twv1.AgentTurnList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, t := range list.Items {
		if controllerutil.ContainsFinalizer(&t, twv1.BudgetFinalizer) {
			return fmt.Errorf("turn %s still holds the budget finalizer", t.Name)
		}
	}
	return nil
}

func wholeSecondClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
}

func TestLedgerRestartBetweenCountAndRelease(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "10", "1h")
	first := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, first, p, "window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "a-0", "0.40", twv1.TurnSucceeded, clk.Now(), nil)
	crashed := ledgerProcess(t, ns, clk, crashBeforeRelease)
	eventually(t, "counted before the crash", func() error {
		_, _ = crashed.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		got := &twv1.TurnPolicy{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		return ledgerIs("0.40", 1, 1)(got)
	})
	if err := noneHeld(ns); err == nil {
		t.Fatal("the crashed process removed the finalizer")
	}
	restarted := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, restarted, p, "released after the restart, counted once", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.40", 1, 0)(got); err != nil {
			return err
		}
		return noneHeld(ns)
	})
}

func TestLedgerDeletedTurns(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "10", "1h")
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, r, p, "window opened", ledgerIs("0.00", 0, 0))
	settled := budgetTurn(t, ns, "a-0", "0.40", twv1.TurnFailed, clk.Now(), nil)
	// A turn deleted unsettled whose run is gone: nothing will settle it.
	orphan := budgetTurn(t, ns, "b-0", "0.10", "", clk.Now(), nil)
	for _, turn := range []*twv1.AgentTurn{settled, orphan} {
		if err := k8s.Delete(context.Background(), turn); err != nil {
			t.Fatal(err)
		}
	}
	pass(t, r, p, "both counted once, both gone", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.50", 2, 0)(got); err != nil {
			return err
		}
		var list twv1.AgentTurnList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d turns left", len(list.Items))
		}
		return nil
	})
	for range 3 {
		pass(t, r, p, "still counted once", ledgerIs("0.50", 2, 0))
	}
}

func TestLedgerTwoManagersRace(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "100", "1h")
	a := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	b := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, a, p, "window opened", ledgerIs("0.00", 0, 0))
	// Both managers loop over the policy while the turns settle one by
	// one, so that each often acts on a copy the other has moved past.
	var done sync.WaitGroup
	stop := make(chan struct{})
	for _, r := range []*turnpolicy.TurnPolicyReconciler{a, b} {
		done.Add(1)
		go func() {
			defer done.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
			}
		}()
	}
	var sum monitor.Money
	const n = 16
	for i := range n {
		cost := usd(fmt.Sprintf("0.%02d", i+1))
		sum = sum.Add(cost)
		budgetTurn(t, ns, fmt.Sprintf("t%d-0", i), cost.String(), twv1.TurnSucceeded, clk.Now(), nil)
		time.Sleep(time.Duration(i%4) * 15 * time.Millisecond)
	}
	eventually(t, "every turn let go", func() error { return noneHeld(ns) })
	close(stop)
	done.Wait()
	pass(t, a, p, "every turn counted exactly once", ledgerIs(sum.String(), n, 0))
	pass(t, b, p, "and the other manager agrees", ledgerIs(sum.String(), n, 0))
}

func TestLedgerStaleCache(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "10", "1h")
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, r, p, "window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "a-0", "0.40", twv1.TurnSucceeded, clk.Now(), nil)
	var before twv1.AgentTurnList
	if err := k8s.List(context.Background(), &before, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// A turn cache that has not seen the turn at all, while it is counted
	// and holds the finalizer: the entry must stay.
	lagging := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if l, ok := list.(*twv1.AgentTurnList); ok {
			l.Items = nil
			return nil
		}
		return c.List(ctx, list, opts...)
	}}
	crashed := ledgerProcess(t, ns, clk, crashBeforeRelease)
	eventually(t, "counted", func() error {
		_, _ = crashed.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		got := &twv1.TurnPolicy{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		return ledgerIs("0.40", 1, 1)(got)
	})
	blind := ledgerProcess(t, ns, clk, lagging)
	for range 3 {
		pass(t, blind, p, "a lagging cache keeps the entry", ledgerIs("0.40", 1, 1))
	}
	pass(t, r, p, "released", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.40", 1, 0)(got); err != nil {
			return err
		}
		return noneHeld(ns)
	})
	// A turn cache that still shows the turn settled and holding the
	// finalizer after it was counted and let go: the live read says no.
	stale := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if l, ok := list.(*twv1.AgentTurnList); ok {
			before.DeepCopyInto(l)
			return nil
		}
		return c.List(ctx, list, opts...)
	}}
	old := ledgerProcess(t, ns, clk, stale)
	for range 3 {
		pass(t, old, p, "a stale cache counts nothing again", ledgerIs("0.40", 1, 0))
	}
	// A manager whose policy cache lags behind the other's writes: its
	// ledger write carries the resourceVersion it read and is refused, so
	// it never overwrites what the other counted meanwhile.
	frozen := &twv1.TurnPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), frozen); err != nil {
		t.Fatal(err)
	}
	behind := ledgerProcess(t, ns, clk, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if tp, ok := obj.(*twv1.TurnPolicy); ok {
			frozen.DeepCopyInto(tp)
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	budgetTurn(t, ns, "e-0", "0.20", twv1.TurnSucceeded, clk.Now(), nil)
	pass(t, r, p, "the other manager counts e-0", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.60", 2, 0)(got); err != nil {
			return err
		}
		return noneHeld(ns)
	})
	budgetTurn(t, ns, "f-0", "0.30", twv1.TurnSucceeded, clk.Now(), nil)
	eventually(t, "the lagging manager sees f-0", func() error {
		var l twv1.AgentTurnList
		if err := behind.List(context.Background(), &l, client.InNamespace(ns)); err != nil || len(l.Items) < 3 {
			return fmt.Errorf("%d turns (%v)", len(l.Items), err)
		}
		return nil
	})
	for range 3 {
		_, _ = behind.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	}
	pass(t, r, p, "nothing counted is lost", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.90", 3, 0)(got); err != nil {
			return err
		}
		return noneHeld(ns)
	})
}

func TestLedgerWindowRollover(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	start := clk.Now()
	p := budgetPolicy(t, ns, "1", "1h")
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, r, p, "window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "a-0", "0.80", twv1.TurnSucceeded, clk.Now(), nil)
	pass(t, r, p, "counted in the first window", ledgerIs("0.80", 1, 0))
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	if err != nil || res.RequeueAfter != time.Hour {
		t.Errorf("requeue after %v (%v), want the window's end in 1h", res.RequeueAfter, err)
	}
	clk.Step(2*time.Hour + 5*time.Minute)
	pass(t, r, p, "rolled by whole windows", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.00", 0, 0)(got); err != nil {
			return err
		}
		if ws := got.Status.Budget.WindowStart.Time; !ws.Equal(start.Add(2 * time.Hour)) {
			return fmt.Errorf("window starts %v, want %v", ws, start.Add(2*time.Hour))
		}
		return nil
	})
	// Settled in the window before, counted only now: it counts nothing.
	budgetTurn(t, ns, "b-0", "5.00", twv1.TurnSucceeded, start.Add(90*time.Minute), nil)
	budgetTurn(t, ns, "c-0", "1.25", twv1.TurnSucceeded, clk.Now(), nil)
	pass(t, r, p, "only the new window's turn counts", func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("1.25", 1, 0)(got); err != nil {
			return err
		}
		return noneHeld(ns)
	})
}

// A drill is a run (docs/drill.md#budgets): its settled turn counts once,
// its running turn's progress is part of the spend, its turns get the
// budget finalizer, and it is held while the budget is spent.
func TestLedgerDrillIsARun(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "1", "1h")
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, r, p, "window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "d-0", "0.07", twv1.TurnFailed, clk.Now(), map[string]string{twv1.LabelDrill: "identicalLoop"})
	drill := newRun(ns, "d", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "identicalLoop"} })
	create(t, drill)
	if err := reportProgress(k8s, ns, "d", `{"status":{"phase":"Running","progress":{"turn":"d-1","steps":3,"costUSD":"0.05"}}}`); err != nil {
		t.Fatal(err)
	}
	// The running part is refreshed once per progress period (the clock
	// stands still here): count only once the cache shows the progress.
	eventually(t, "the ledger's cache shows the drill's progress", func() error {
		got := &twv1.AgentRun{}
		if err := r.Get(context.Background(), client.ObjectKeyFromObject(drill), got); err != nil || got.Status.Progress == nil {
			return fmt.Errorf("no progress yet (%v)", err)
		}
		return nil
	})
	counted := func(got *twv1.TurnPolicy) error {
		if err := ledgerIs("0.07", 1, 0)(got); err != nil {
			return err
		}
		if got.Status.Budget.SpentUSD != "0.12" {
			return fmt.Errorf("spent %s, want 0.12 (0.07 settled, 0.05 running)", got.Status.Budget.SpentUSD)
		}
		return noneHeld(ns)
	}
	pass(t, r, p, "a drill's turn counts and is let go", counted)
	for range 3 {
		pass(t, r, p, "and counts once", counted)
	}
	runs := &agentrun.AgentRunReconciler{Client: k8s, Recorder: events.NewFakeRecorder(10)}
	turn := &twv1.AgentTurn{}
	if err := runs.AddBudgetFinalizer(context.Background(), drill, turn); err != nil || !controllerutil.ContainsFinalizer(turn, twv1.BudgetFinalizer) {
		t.Errorf("a drill's turn got %v (%v)", turn.Finalizers, err)
	}
	spent := p.DeepCopy()
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: p.Name}, spent); err != nil {
		t.Fatal(err)
	}
	spent.Status.Conditions = []metav1.Condition{{Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue, Reason: turnpolicy.ReasonBudgetExhausted, Message: "spent", LastTransitionTime: metav1.Now()}}
	if err := k8s.Status().Update(context.Background(), spent); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a drill is held", func() error {
		d, err := runs.HoldForBudget(context.Background(), drill, agentrun.Decision{Step: agentrun.StepCreate})
		if err != nil || d.Step != agentrun.StepHold {
			return fmt.Errorf("drill decision %s (%v)", d.Step, err)
		}
		return nil
	})
}

func TestLedgerBudgetRemoved(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	clk := wholeSecondClock()
	p := budgetPolicy(t, ns, "10", "1h")
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	pass(t, r, p, "window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "a-0", "0.40", "", clk.Now(), nil) // still running
	got := &twv1.TurnPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Budget = nil
	if err := k8s.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	pass(t, r, p, "no ledger left, the turn let go", func(got *twv1.TurnPolicy) error {
		if got.Status.Budget != nil {
			return fmt.Errorf("ledger %+v", got.Status.Budget)
		}
		return noneHeld(ns)
	})
}

// passCluster is pass for a ClusterTurnPolicy.
func passCluster(t *testing.T, r *turnpolicy.TurnPolicyReconciler, p *twv1.ClusterTurnPolicy, what string, cond func(*twv1.TurnPolicy) error) {
	t.Helper()
	eventually(t, what, func() error {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			return err
		}
		got := &twv1.ClusterTurnPolicy{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		return cond(&twv1.TurnPolicy{Status: got.Status})
	})
}

func TestLedgerEveryBudgetCounts(t *testing.T) {
	needEnv(t)
	ns := newNamespace(t)
	team := "team-" + ns
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"turnwatch.dev/test-team": team}
	if err := k8s.Update(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	sel := &metav1.LabelSelector{MatchLabels: nsObj.Labels}
	older := &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: team + "-defaults"}, Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: sel}}
	create(t, older)
	time.Sleep(1100 * time.Millisecond) // creation timestamps are whole seconds
	cluster := &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: team + "-budget"}, Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: sel,
		TurnPolicySpec: twv1.TurnPolicySpec{Budget: &twv1.Budget{MaxCostUSD: "10", Window: "1h"}}}}
	create(t, cluster)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), older)
		_ = k8s.Delete(context.Background(), cluster)
	})
	local := budgetPolicy(t, ns, "10", "1h")
	clk := wholeSecondClock()
	r := ledgerProcess(t, ns, clk, interceptor.Funcs{})
	passCluster(t, r, cluster, "cluster window opened", ledgerIs("0.00", 0, 0))
	pass(t, r, local, "namespace window opened", ledgerIs("0.00", 0, 0))
	budgetTurn(t, ns, "a-0", "0.30", twv1.TurnSucceeded, clk.Now(), nil)
	passCluster(t, r, cluster, "the cluster budget counts", ledgerIs("0.30", 1, 1))
	if err := noneHeld(ns); err == nil {
		t.Fatal("let go before the namespace's budget counted it")
	}
	pass(t, r, local, "the namespace budget counts and lets go", func(p *twv1.TurnPolicy) error {
		if err := ledgerIs("0.30", 1, 0)(p); err != nil {
			return err
		}
		return noneHeld(ns)
	})
	passCluster(t, r, cluster, "the cluster budget forgets it", func(p *twv1.TurnPolicy) error {
		if err := ledgerIs("0.30", 1, 0)(p); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, twv1.PolicyConditionOverlapping)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("overlapping %+v", c)
		}
		return containsAll(c.Message, "ClusterTurnPolicy/"+older.Name+", ClusterTurnPolicy/"+cluster.Name, "the oldest, ClusterTurnPolicy/"+older.Name+", wins")
	})
}
