package agentturn

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// A running turn of a namespace whose budget is exhausted is stopped as
// overspend by the detector "budget" (docs/policies.md#budgets), the way a
// sidecar's trip stops it: the agent is stopped, the turn fails with a
// typed error, and the run faults (overspend is never rerolled). A drill's
// turn is stopped too: a drill is a run.

// budgetStop is the error a running turn is stopped with when a budget of
// its namespace is exhausted, or nil.
func (r *AgentTurnReconciler) budgetStop(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn) *twv1.TurnError {
	if turn.Status.Outcome != "" {
		return nil
	}
	pols, err := turnpolicy.PoliciesFor(ctx, r.Client, turn.Namespace)
	if err != nil {
		log.FromContext(ctx).Info("policies not read; budgets not checked", "error", err.Error())
		return nil
	}
	return turnpolicy.BudgetStop(pols)
}

// stopOverBudget stops the agent and settles the turn as failed with e.
func (r *AgentTurnReconciler) stopOverBudget(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod, e *twv1.TurnError) error {
	if err := r.stopAndSettle(ctx, turn, pod, twv1.TurnFailed, e); err != nil {
		return err
	}
	r.Recorder.Eventf(run, turn, corev1.EventTypeWarning, agentrun.EventBudgetExhausted, "Stop", "turn %s stopped: %s", turn.Name, e.Message)
	r.recordSettled(ctx, turn, false)
	return nil
}

// BudgetNowExhausted passes the policy updates that exhaust a budget.
var BudgetNowExhausted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return agentrun.ExhaustedOf(e.ObjectNew) && !agentrun.ExhaustedOf(e.ObjectOld)
	},
	CreateFunc:  func(e event.CreateEvent) bool { return agentrun.ExhaustedOf(e.Object) },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// runningTurns are the unsettled turns of the namespaces a policy applies
// to.
func (r *AgentTurnReconciler) runningTurns(ctx context.Context, obj client.Object) []reconcile.Request {
	namespaces, err := turnpolicy.PolicyNamespaces(ctx, r.Client, obj)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, ns := range namespaces {
		var list twv1.AgentTurnList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil
		}
		for _, t := range list.Items {
			if t.Status.Outcome == "" {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
			}
		}
	}
	return reqs
}
