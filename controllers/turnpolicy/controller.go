package turnpolicy

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TurnPolicyReconciler keeps the status of TurnPolicies and
// ClusterTurnPolicies, one reconciler for both kinds (a request without a
// namespace is a ClusterTurnPolicy): the budget's ledger
// (docs/policies.md#the-ledger) and the BudgetExhausted and Overlapping
// conditions.
type TurnPolicyReconciler struct {
	client.Client
	// APIReader reads a turn live before it is counted, so that a stale
	// cache never counts it twice.
	APIReader client.Reader
	Clock     clock.PassiveClock
	Config    shared.Config

	mu sync.Mutex
	// refreshed is when each policy's running part was last computed
	// (refreshDue).
	refreshed map[types.NamespacedName]time.Time
}

// +kubebuilder:rbac:groups=turnwatch.dev,resources=turnpolicies/status;clusterturnpolicies/status,verbs=update
// The budget finalizer is removed from a counted turn (docs/policies.md#the-ledger).
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns,verbs=patch

// Reconcile computes one policy's status and writes it when it changed.
func (r *TurnPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pol, err := r.load(ctx, req)
	if apierrors.IsNotFound(err) {
		r.forget(req)
		forgetBudgetMetrics(policyMetricName(req.Namespace, req.Name))
		return ctrl.Result{}, r.releaseUnbudgeted(ctx, req.Namespace)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	namespaces, err := PolicyNamespaces(ctx, r.Client, pol.Object)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := pol.Status().DeepCopy()
	st.ObservedGeneration = pol.Object.GetGeneration()
	peers, err := r.peers(ctx, pol)
	if err != nil {
		return ctrl.Result{}, err
	}
	msg, overlaps := overlapMessage(peers)
	setOverlapping(st, msg, overlaps)
	var res ctrl.Result
	var turns []twv1.AgentTurn
	if pol.Spec.Budget == nil {
		st.Budget = nil
		if err := r.releaseUnbudgeted(ctx, pol.Object.GetNamespace()); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		if turns, err = r.turnsIn(ctx, namespaces); err != nil {
			return ctrl.Result{}, err
		}
		if res, err = r.ledger(ctx, pol, st, namespaces, turns); err != nil {
			return ctrl.Result{}, err
		}
	}
	setBudgetExhausted(st, pol.Spec.Budget)
	if err := r.writeStatus(ctx, pol, st); err != nil {
		// A conflict: another writer (a second manager in a rollout, or
		// our own earlier write not yet cached) got there first; the
		// policy's update brings it back.
		return ctrl.Result{}, shared.IgnoreConflict(err)
	}
	setBudgetMetrics(pol)
	if pol.Spec.Budget != nil {
		if err := r.releaseTurns(ctx, pol, turns); err != nil {
			return ctrl.Result{}, shared.IgnoreConflict(err)
		}
	}
	return res, nil
}

// ledger moves the budget's ledger one pass on: roll the window, count the
// settled turns (step 1), drop the entries whose turn was let go (step 3),
// and set the spend. It says when to look again.
func (r *TurnPolicyReconciler) ledger(ctx context.Context, pol AppliedPolicy, st *twv1.TurnPolicyStatus, namespaces []string, turns []twv1.AgentTurn) (ctrl.Result, error) {
	window, err := windowOf(pol.Spec.Budget)
	if err != nil {
		log.FromContext(ctx).Info("budget not kept", "error", err.Error())
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	if st.Budget == nil {
		st.Budget = &twv1.BudgetStatus{}
	}
	b := st.Budget
	kept := keptRunning(b)
	rolled := rollWindow(b, window, now)
	toCount, err := r.settledTurns(ctx, b, turns)
	if err != nil {
		return ctrl.Result{}, err
	}
	countTurns(b, toCount)
	released, err := r.released(ctx, b, turns)
	if err != nil {
		return ctrl.Result{}, err
	}
	releaseCounted(b, released)
	runs, err := r.runsIn(ctx, namespaces)
	if err != nil {
		return ctrl.Result{}, err
	}
	fresh := runningSpend(runs, turns, b)
	res := ctrl.Result{RequeueAfter: windowLeft(b, window, now)}
	setSpent(b, fresh)
	crossed, _ := overBudget(pol.Spec.Budget, b)
	if !rolled && len(toCount) == 0 && crossed == BudgetExhausted(pol.Status()) && fresh != kept {
		if wait := r.refreshWait(client.ObjectKeyFromObject(pol.Object), now); wait > 0 {
			// Keep the running part as written: at most one refresh per
			// progress period, unless the budget is crossed either way.
			setSpent(b, kept)
			res.RequeueAfter = min(res.RequeueAfter, wait)
			return res, nil
		}
	}
	r.markRefreshed(client.ObjectKeyFromObject(pol.Object), now)
	return res, nil
}

// refreshWait is how long until the policy's running part may be computed
// again: once per sidecar progress period (docs/protocol.md), since no
// figure moves faster than that.
func (r *TurnPolicyReconciler) refreshWait(key types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.refreshed[key]
	if !ok {
		return 0
	}
	return last.Add(shared.ProgressPeriod(r.Config.Freshness())).Sub(now)
}

// forget drops what is remembered of a deleted policy.
func (r *TurnPolicyReconciler) forget(req ctrl.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refreshed, req.NamespacedName)
}

func (r *TurnPolicyReconciler) markRefreshed(key types.NamespacedName, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refreshed == nil {
		r.refreshed = map[types.NamespacedName]time.Time{}
	}
	r.refreshed[key] = now
}

// BudgetExhausted says whether a status's BudgetExhausted condition is True.
func BudgetExhausted(st *twv1.TurnPolicyStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionBudgetExhausted)
	return c != nil && c.Status == metav1.ConditionTrue
}

// writeStatus writes the policy's status if it changed, by an update that
// carries the resourceVersion read: two writers on one copy cannot both
// count the same turn (step 1 of the ledger).
func (r *TurnPolicyReconciler) writeStatus(ctx context.Context, pol AppliedPolicy, st *twv1.TurnPolicyStatus) error {
	if equality.Semantic.DeepEqual(*st, *pol.Status()) {
		return nil
	}
	*pol.Status() = *st
	return r.Status().Update(ctx, pol.Object)
}

// load reads the policy of a request from the cache.
func (r *TurnPolicyReconciler) load(ctx context.Context, req ctrl.Request) (AppliedPolicy, error) {
	if req.Namespace == "" {
		p := &twv1.ClusterTurnPolicy{}
		if err := r.Get(ctx, req.NamespacedName, p); err != nil {
			return AppliedPolicy{}, err
		}
		return AppliedPolicy{Source: KindClusterTurnPolicy + "/" + p.Name, Spec: &p.Spec.TurnPolicySpec, Object: p}, nil
	}
	p := &twv1.TurnPolicy{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return AppliedPolicy{}, err
	}
	return AppliedPolicy{Source: KindTurnPolicy + "/" + p.Name, Spec: &p.Spec, Object: p}, nil
}

// peers are the policies of pol's kind that apply to some of its runs, pol
// included, as orderPolicies orders them.
func (r *TurnPolicyReconciler) peers(ctx context.Context, pol AppliedPolicy) ([]AppliedPolicy, error) {
	if p, ok := pol.Object.(*twv1.ClusterTurnPolicy); ok {
		var all twv1.ClusterTurnPolicyList
		if err := r.List(ctx, &all); err != nil {
			return nil, err
		}
		var nss corev1.NamespaceList
		if err := r.List(ctx, &nss); err != nil {
			return nil, err
		}
		return clusterPeers(p, all.Items, nss.Items), nil
	}
	var local twv1.TurnPolicyList
	if err := r.List(ctx, &local, client.InNamespace(pol.Object.GetNamespace())); err != nil {
		return nil, err
	}
	return orderPolicies(nil, local.Items, nil), nil
}

// turnsIn are the cached turns of the namespaces.
func (r *TurnPolicyReconciler) turnsIn(ctx context.Context, namespaces []string) ([]twv1.AgentTurn, error) {
	var out []twv1.AgentTurn
	for _, ns := range namespaces {
		var list twv1.AgentTurnList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// runsIn are the cached runs of the namespaces.
func (r *TurnPolicyReconciler) runsIn(ctx context.Context, namespaces []string) ([]twv1.AgentRun, error) {
	var out []twv1.AgentRun
	for _, ns := range namespaces {
		var list twv1.AgentRunList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// runningSpend is the running turns' cost so far: the status.progress of
// every running run (a drill's too), unless the turn it names has settled
// (its cost is then the ledger's to count), and the own counts of every
// running attached Pod's turn (it has no run: docs/attach.md).
func runningSpend(runs []twv1.AgentRun, turns []twv1.AgentTurn, b *twv1.BudgetStatus) monitor.Money {
	settled := map[types.NamespacedName]bool{}
	var total monitor.Money
	for i := range turns {
		t := &turns[i]
		switch {
		case t.Status.Outcome != "" || counted(b, t.UID):
			settled[types.NamespacedName{Namespace: t.Namespace, Name: t.Name}] = true
		case t.Spec.PodRef != nil:
			cost, _ := shared.ParseUSD(t.Status.CostUSD)
			total = total.Add(cost)
		}
	}
	for i := range runs {
		run := &runs[i]
		p := run.Status.Progress
		if shared.Finished(run.Status.Phase) || p == nil || settled[types.NamespacedName{Namespace: run.Namespace, Name: p.Turn}] {
			continue
		}
		if c := shared.RunProgressFor(run, p.Turn); c != nil {
			total = total.Add(c.Cost)
		}
	}
	return total
}

// SetupWithManager registers the controller: it follows both policy kinds
// (and, for the Overlapping condition, each policy's peers: overlapPeers),
// the turns holding the budget finalizer and the runs' progress, each
// mapped to the budgets that apply to its namespace, and the namespaces'
// labels (which ClusterTurnPolicies select them).
func (r *TurnPolicyReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.TurnPolicy{}).
		Watches(&twv1.TurnPolicy{}, r.overlapPeers()).
		Watches(&twv1.ClusterTurnPolicy{}, &handler.EnqueueRequestForObject{}).
		Watches(&twv1.ClusterTurnPolicy{}, r.overlapPeers()).
		Watches(&twv1.AgentTurn{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOfTurn)).
		Watches(&twv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOfRun)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clusterPolicies), builder.WithPredicates(labelsChanged)).
		Named("turnpolicy").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, concurrency)}).
		Complete(r)
}

// labelsChanged passes the namespace updates that change its labels: which
// ClusterTurnPolicies select it.
var labelsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// clusterPolicies are every ClusterTurnPolicy: a namespace's labels moved,
// and with them which ones select it.
func (r *TurnPolicyReconciler) clusterPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var list twv1.ClusterTurnPolicyList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return reqs
}
