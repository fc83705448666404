package turnpolicy

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// The ledger's dealings with turns (docs/policies.md#the-ledger): which
// turns to count, which entries to drop, which finalizers to remove.

// settledTurns are the turns to count in this pass (step 1): each cached
// turn that holds the finalizer, is settled and is not listed, read again
// live (after the policy was read), so that a turn whose finalizer another
// writer already removed, or that a stale cache shows unsettled, is not
// taken.
func (r *TurnPolicyReconciler) settledTurns(ctx context.Context, b *twv1.BudgetStatus, turns []twv1.AgentTurn) ([]settledTurn, error) {
	var out []settledTurn
	for i := range turns {
		t := &turns[i]
		if !controllerutil.ContainsFinalizer(t, twv1.BudgetFinalizer) || counted(b, t.UID) || !r.countable(ctx, t) {
			continue
		}
		live := &twv1.AgentTurn{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(t), live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if live.UID != t.UID || !controllerutil.ContainsFinalizer(live, twv1.BudgetFinalizer) || !r.countable(ctx, live) {
			continue
		}
		out = append(out, settledOf(live))
	}
	return out, nil
}

// countable says whether a turn's cost is final: it settled, or it is
// being deleted and has no run left to settle it (an attached Pod's turn
// never has one: it goes with its Pod).
func (r *TurnPolicyReconciler) countable(ctx context.Context, t *twv1.AgentTurn) bool {
	if t.Status.Outcome != "" {
		return true
	}
	if t.DeletionTimestamp == nil {
		return false
	}
	if t.Spec.PodRef != nil {
		return true
	}
	run := &twv1.AgentRun{}
	err := r.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.RunName}, run)
	return apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(t, run))
}

// settledOf is what the ledger counts of a turn.
func settledOf(t *twv1.AgentTurn) settledTurn {
	cost, _ := shared.ParseUSD(t.Status.CostUSD)
	at := t.CreationTimestamp.Time
	switch {
	case t.Status.CompletionTime != nil:
		at = t.Status.CompletionTime.Time
	case t.DeletionTimestamp != nil:
		at = t.DeletionTimestamp.Time
	}
	return settledTurn{UID: t.UID, Name: t.Namespace + "/" + t.Name, Cost: cost, At: at}
}

// released are the listed turns that no longer hold the finalizer, or are
// gone (step 3). A turn the cache does not show is asked for live: a
// cache that has not seen it yet must not drop it, or it would be counted
// again.
func (r *TurnPolicyReconciler) released(ctx context.Context, b *twv1.BudgetStatus, turns []twv1.AgentTurn) (map[types.UID]bool, error) {
	cached := map[types.UID]*twv1.AgentTurn{}
	for i := range turns {
		cached[turns[i].UID] = &turns[i]
	}
	out := map[types.UID]bool{}
	for _, c := range b.Counting {
		t, ok := cached[c.UID]
		if !ok {
			var err error
			if t, err = r.liveTurn(ctx, c); err != nil {
				return nil, err
			}
		}
		if t == nil || t.UID != c.UID || !controllerutil.ContainsFinalizer(t, twv1.BudgetFinalizer) {
			out[c.UID] = true
		}
	}
	return out, nil
}

// liveTurn reads a listed turn from the API server; nil when it is gone.
func (r *TurnPolicyReconciler) liveTurn(ctx context.Context, c twv1.CountedTurn) (*twv1.AgentTurn, error) {
	ns, name, _ := strings.Cut(c.Name, "/")
	t := &twv1.AgentTurn{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, t)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return t, err
}

// releaseTurns removes the finalizer of each turn pol lists once every
// budget that applies to the turn lists it too (step 2).
func (r *TurnPolicyReconciler) releaseTurns(ctx context.Context, pol AppliedPolicy, turns []twv1.AgentTurn) error {
	b := pol.Status().Budget
	if b == nil {
		return nil
	}
	for i := range turns {
		t := &turns[i]
		if !counted(b, t.UID) || !controllerutil.ContainsFinalizer(t, twv1.BudgetFinalizer) {
			continue
		}
		pols, err := PoliciesFor(ctx, r.Client, t.Namespace)
		if err != nil {
			return err
		}
		if !listedByAll(pols, pol, t.UID) {
			continue
		}
		base := t.DeepCopy()
		controllerutil.RemoveFinalizer(t, twv1.BudgetFinalizer)
		if err := r.Patch(ctx, t, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
		log.FromContext(ctx).Info("turn counted by every budget", "turn", t.Name)
	}
	return nil
}

// listedByAll says whether every budget of pols lists the turn; pol's own
// status is taken from pol (just written), the others' from the cache.
func listedByAll(pols []AppliedPolicy, pol AppliedPolicy, uid types.UID) bool {
	for _, p := range pols {
		if p.Spec.Budget == nil {
			continue
		}
		st := p.Status()
		if p.Object.GetUID() == pol.Object.GetUID() {
			st = pol.Status()
		}
		if st.Budget == nil || !counted(st.Budget, uid) {
			return false
		}
	}
	return true
}

// PolicyNamespaces are the namespaces a policy applies to.
func PolicyNamespaces(ctx context.Context, c client.Reader, obj client.Object) ([]string, error) {
	p, ok := obj.(*twv1.ClusterTurnPolicy)
	if !ok {
		return []string{obj.GetNamespace()}, nil
	}
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range list.Items {
		if selects(p.Spec.NamespaceSelector, ns.Labels) {
			out = append(out, ns.Name)
		}
	}
	return out, nil
}

// budgetRequests are the requests of the policies with a budget that apply
// to namespace ns.
func budgetRequests(ctx context.Context, c client.Reader, ns string) []reconcile.Request {
	pols, err := PoliciesFor(ctx, c, ns)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range pols {
		if p.Spec.Budget != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p.Object)})
		}
	}
	return reqs
}

// budgetsOfTurn maps a turn that holds the budget finalizer to the budgets
// of its namespace.
func (r *TurnPolicyReconciler) budgetsOfTurn(ctx context.Context, obj client.Object) []reconcile.Request {
	if !controllerutil.ContainsFinalizer(obj, twv1.BudgetFinalizer) {
		return nil
	}
	return budgetRequests(ctx, r.Client, obj.GetNamespace())
}

// budgetsOfRun maps a run, a drill's too (its progress moves the spend), to
// the budgets of its namespace.
func (r *TurnPolicyReconciler) budgetsOfRun(ctx context.Context, obj client.Object) []reconcile.Request {
	if _, ok := obj.(*twv1.AgentRun); !ok {
		return nil
	}
	return budgetRequests(ctx, r.Client, obj.GetNamespace())
}

// releaseUnbudgeted removes the finalizer from the turns of namespace ns
// (every namespace when ns is "": a ClusterTurnPolicy) that no budget
// applies to any more: their budget was removed or its policy deleted, and
// no ledger is left to let them go.
func (r *TurnPolicyReconciler) releaseUnbudgeted(ctx context.Context, ns string) error {
	var list twv1.AgentTurnList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	budgeted := map[string]bool{}
	for i := range list.Items {
		t := &list.Items[i]
		if !controllerutil.ContainsFinalizer(t, twv1.BudgetFinalizer) {
			continue
		}
		held, seen := budgeted[t.Namespace]
		if !seen {
			pols, err := PoliciesFor(ctx, r.Client, t.Namespace)
			if err != nil {
				return client.IgnoreNotFound(err)
			}
			held = AnyBudget(pols)
			budgeted[t.Namespace] = held
		}
		if held {
			continue
		}
		base := t.DeepCopy()
		controllerutil.RemoveFinalizer(t, twv1.BudgetFinalizer)
		if err := r.Patch(ctx, t, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return nil
}
