package attach

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// CacheByObject narrows the attach cache to the Pods that ask to be
// watched (turnwatch.dev/watch exists), trimmed as the manager's turn Pods
// are (shared.TrimPod). It is a cache of its own: the manager's holds the
// Pods of runs (turnwatch.dev/run), and one label selector cannot select
// both.
func CacheByObject() map[client.Object]cache.ByObject {
	watched, _ := labels.NewRequirement(twv1.LabelWatch, selection.Exists, nil)
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*watched), Transform: shared.TrimPod},
	}
}

// NewCache is the attach cache, added to the manager (which starts it);
// namespaces narrows it as the manager's cache is (nil: every namespace).
func NewCache(mgr ctrl.Manager, namespaces map[string]cache.Config) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: maps.Clone(namespaces), ByObject: CacheByObject(),
	})
	if err != nil {
		return nil, err
	}
	return c, mgr.Add(c)
}

// SetupWithManager registers the controller: it follows the watched Pods
// of pods (the attach cache), their turns (whose names are theirs), and
// the budgets that become exhausted (a silent agent's Pod is stopped then,
// not at its next report).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache, concurrency int) error {
	r.Pods = pods
	return ctrl.NewControllerManagedBy(mgr).
		Named("attach").
		WatchesRawSource(source.Kind(pods, &corev1.Pod{}, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{})).
		Watches(&twv1.AgentTurn{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(attachedTurn)).
		Watches(&twv1.TurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.runningTurns), builder.WithPredicates(agentturn.BudgetNowExhausted)).
		Watches(&twv1.ClusterTurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.runningTurns), builder.WithPredicates(agentturn.BudgetNowExhausted)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, concurrency)}).
		Complete(r)
}

// attachedTurn passes the events of attached Pods' turns.
var attachedTurn = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	t, ok := obj.(*twv1.AgentTurn)
	return ok && t.Spec.PodRef != nil
})

// runningTurns are the unsettled attached turns of the namespaces a policy
// applies to.
func (r *Reconciler) runningTurns(ctx context.Context, obj client.Object) []reconcile.Request {
	namespaces, err := turnpolicy.PolicyNamespaces(ctx, r.Client, obj)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, ns := range namespaces {
		var list twv1.AgentTurnList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.HasLabels{LabelPod}); err != nil {
			return nil
		}
		for _, t := range list.Items {
			if t.Spec.PodRef != nil && t.Status.Outcome == "" {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
			}
		}
	}
	return reqs
}
