package agentrun

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// Budgets on the run's side (docs/policies.md#budgets): a turn is not
// created while a budget of the run's namespace is exhausted, and every
// turn a budget applies to carries the budget finalizer until the ledger
// counted it. A drill is a run: held and counted like any other
// (docs/policies.md#budgets), since its template may reach a real model.

// EventBudgetExhausted: a run's next turn waits for an exhausted budget
// (a Warning on the run), or a running turn was stopped by one.
const EventBudgetExhausted = twv1.PolicyConditionBudgetExhausted

// StepHold: the next turn waits while a budget is exhausted.
const StepHold step = "Hold"

// HoldForBudget turns a decision to create a turn (first or reroll) into a
// Hold while some budget that applies to the run is exhausted, by the
// policy's BudgetExhausted condition.
func (r *AgentRunReconciler) HoldForBudget(ctx context.Context, run *twv1.AgentRun, d Decision) (Decision, error) {
	if d.Step != StepCreate {
		return d, nil
	}
	pols, err := turnpolicy.PoliciesFor(ctx, r.Client, run.Namespace)
	if err != nil {
		return d, err
	}
	source, figures, ok := turnpolicy.ExhaustedBudget(pols)
	if !ok {
		return d, nil
	}
	msg := budgetHoldMessage(source, figures, d.attempt)
	if c := meta.FindStatusCondition(run.Status.Conditions, twv1.PolicyConditionBudgetExhausted); c == nil || c.Status != metav1.ConditionTrue {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, EventBudgetExhausted, "Hold", "%s", msg)
	}
	return Decision{Step: StepHold, attempt: d.attempt, last: d.last, Why: msg}, nil
}

// budgetHoldMessage says which policy holds the run's next turn, and its
// figures.
func budgetHoldMessage(source, figures string, attempt int32) string {
	what := "the first turn"
	if attempt > 0 {
		what = fmt.Sprintf("the reroll (attempt %d)", attempt)
	}
	return fmt.Sprintf("%s waits: the budget of %s is exhausted: %s", what, source, figures)
}

// setBudgetHold sets the run's BudgetExhausted condition while a budget
// holds its next turn (and says it in Ready's message), and removes it once
// the turn may be created.
func setBudgetHold(st *twv1.AgentRunStatus, d Decision) {
	if d.Step != StepHold {
		meta.RemoveStatusCondition(&st.Conditions, twv1.PolicyConditionBudgetExhausted)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue, ObservedGeneration: st.ObservedGeneration,
		Reason: turnpolicy.ReasonBudgetExhausted, Message: d.Why,
	})
	if ready := meta.FindStatusCondition(st.Conditions, ConditionReady); ready != nil {
		ready.Message = d.Why
	}
}

// AddBudgetFinalizer puts the budget finalizer on a new turn (a drill's
// too) when some budget applies to its namespace, so that the turn is
// counted even if it is deleted (docs/policies.md#the-ledger).
func (r *AgentRunReconciler) AddBudgetFinalizer(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn) error {
	pols, err := turnpolicy.PoliciesFor(ctx, r.Client, run.Namespace)
	if err != nil {
		return err
	}
	if turnpolicy.AnyBudget(pols) {
		controllerutil.AddFinalizer(turn, twv1.BudgetFinalizer)
	}
	return nil
}

// budgetChanged passes the policy events that can free a held run: its
// BudgetExhausted condition changed, its spec changed, it was deleted.
var budgetChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || ExhaustedOf(e.ObjectOld) != ExhaustedOf(e.ObjectNew)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// ExhaustedOf says whether a policy object's budget is exhausted.
func ExhaustedOf(obj client.Object) bool {
	switch p := obj.(type) {
	case *twv1.TurnPolicy:
		return turnpolicy.BudgetExhausted(&p.Status)
	case *twv1.ClusterTurnPolicy:
		return turnpolicy.BudgetExhausted(&p.Status)
	}
	return false
}

// heldRuns are the unfinished runs of the namespaces the policy applies
// to: all of them, not only those whose status shows the hold, since a
// Hold just written may not be in the cache yet.
func (r *AgentRunReconciler) heldRuns(ctx context.Context, obj client.Object) []reconcile.Request {
	namespaces, err := turnpolicy.PolicyNamespaces(ctx, r.Client, obj)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, ns := range namespaces {
		var list twv1.AgentRunList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil
		}
		for _, run := range list.Items {
			if !shared.Finished(run.Status.Phase) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: run.Name}})
			}
		}
	}
	return reqs
}
