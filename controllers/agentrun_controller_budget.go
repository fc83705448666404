package controllers

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
)

// Budgets on the run's side (docs/policies.md#budgets): a turn is not
// created while a budget of the run's namespace is exhausted, and every
// turn a budget applies to carries the budget finalizer until the ledger
// counted it. A drill is a run: held and counted like any other
// (docs/policies.md#budgets), since its template may reach a real model.

// EventBudgetExhausted: a run's next turn waits for an exhausted budget
// (a Warning on the run), or a running turn was stopped by one.
const EventBudgetExhausted = twv1.PolicyConditionBudgetExhausted

// stepHold: the next turn waits while a budget is exhausted.
const stepHold step = "Hold"

// holdForBudget turns a decision to create a turn (first or reroll) into a
// hold while some budget that applies to the run is exhausted, by the
// policy's BudgetExhausted condition.
func (r *AgentRunReconciler) holdForBudget(ctx context.Context, run *twv1.AgentRun, d decision) (decision, error) {
	if d.step != stepCreate {
		return d, nil
	}
	pols, err := policiesFor(ctx, r.Client, run.Namespace)
	if err != nil {
		return d, err
	}
	source, figures, ok := exhaustedBudget(pols)
	if !ok {
		return d, nil
	}
	msg := budgetHoldMessage(source, figures, d.attempt)
	if c := meta.FindStatusCondition(run.Status.Conditions, twv1.PolicyConditionBudgetExhausted); c == nil || c.Status != metav1.ConditionTrue {
		r.Recorder.Eventf(run, nil, corev1.EventTypeWarning, EventBudgetExhausted, "Hold", "%s", msg)
	}
	return decision{step: stepHold, attempt: d.attempt, last: d.last, why: msg}, nil
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
func setBudgetHold(st *twv1.AgentRunStatus, d decision) {
	if d.step != stepHold {
		meta.RemoveStatusCondition(&st.Conditions, twv1.PolicyConditionBudgetExhausted)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue, ObservedGeneration: st.ObservedGeneration,
		Reason: ReasonBudgetExhausted, Message: d.why,
	})
	if ready := meta.FindStatusCondition(st.Conditions, ConditionReady); ready != nil {
		ready.Message = d.why
	}
}

// addBudgetFinalizer puts the budget finalizer on a new turn (a drill's
// too) when some budget applies to its namespace, so that the turn is
// counted even if it is deleted (docs/policies.md#the-ledger).
func (r *AgentRunReconciler) addBudgetFinalizer(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn) error {
	pols, err := policiesFor(ctx, r.Client, run.Namespace)
	if err != nil {
		return err
	}
	if anyBudget(pols) {
		controllerutil.AddFinalizer(turn, twv1.BudgetFinalizer)
	}
	return nil
}

// budgetChanged passes the policy events that can free a held run: its
// BudgetExhausted condition changed, its spec changed, it was deleted.
var budgetChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || exhaustedOf(e.ObjectOld) != exhaustedOf(e.ObjectNew)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// exhaustedOf says whether a policy object's budget is exhausted.
func exhaustedOf(obj client.Object) bool {
	switch p := obj.(type) {
	case *twv1.TurnPolicy:
		return budgetExhausted(&p.Status)
	case *twv1.ClusterTurnPolicy:
		return budgetExhausted(&p.Status)
	}
	return false
}

// heldRuns are the unfinished runs of the namespaces the policy applies
// to: all of them, not only those whose status shows the hold, since a
// hold just written may not be in the cache yet.
func (r *AgentRunReconciler) heldRuns(ctx context.Context, obj client.Object) []reconcile.Request {
	namespaces, err := policyNamespaces(ctx, r.Client, obj)
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
			if !finished(run.Status.Phase) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: run.Name}})
			}
		}
	}
	return reqs
}
