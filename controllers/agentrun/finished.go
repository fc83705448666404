package agentrun

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// What status promises (docs/design.md#what-status-promises): terminal is terminal, and the run's
// record of its turns outlives the turns.

// holdFinished is the whole reconcile of a Succeeded, Faulted or Aborted
// run: nothing an edit (spec, reroll policy, cancel, the cluster config) or
// a deletion (of a turn) does afterwards moves its phase, starts a turn, or
// changes its attempts, steps or cost. Only observedGeneration follows the
// spec, so that a client sees its edit was read; then the finalizer goes
// (if the run is being deleted) or the TTL runs.
func (r *AgentRunReconciler) holdFinished(ctx context.Context, run *twv1.AgentRun) (ctrl.Result, error) {
	st := run.Status.DeepCopy()
	st.ObservedGeneration = run.Generation
	drillWait, err := r.holdDrill(ctx, run, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	before := run.Status.Drill
	wrote, err := r.putStatus(ctx, run, *st)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wrote && drillDecided(before, run.Status.Drill) {
		r.recordDrill(run)
	}
	if run.DeletionTimestamp != nil {
		return ctrl.Result{}, r.release(ctx, run)
	}
	res, err := r.expire(ctx, run)
	if drillWait > 0 && (res.RequeueAfter == 0 || drillWait < res.RequeueAfter) {
		res.RequeueAfter = drillWait
	}
	return res, err
}

// withGone adds to the run's live turns (oldest first) a placeholder for
// every turn its status lists that is gone, so that a deleted turn still
// Counts: in attempts, steps and cost, and (deleted before it settled) as a
// failed turn that the policy rerolls under a new name or faults on. An
// unsettled turn missing from the cache is read from the API server first:
// the cache may not have shown a turn this controller just created.
func (r *AgentRunReconciler) withGone(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn) ([]twv1.AgentTurn, error) {
	have := make(map[string]bool, len(turns))
	for i := range turns {
		have[turns[i].Name] = true
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	for _, ref := range run.Status.Turns {
		if have[ref.Name] {
			continue
		}
		if ref.Outcome != "" {
			// Settled in status already: what the status kept is all a
			// live copy would say, so no read is needed.
			turns = append(turns, goneTurn(run, ref))
			continue
		}
		live := &twv1.AgentTurn{}
		err := reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, live)
		switch {
		case err == nil && metav1.IsControlledBy(live, run):
			turns = append(turns, *live)
		case err == nil || apierrors.IsNotFound(err):
			turns = append(turns, goneTurn(run, ref))
		default:
			return nil, err
		}
	}
	slices.SortFunc(turns, func(a, b twv1.AgentTurn) int { return int(a.Spec.Attempt - b.Spec.Attempt) })
	return turns, nil
}

// messageTurnDeleted is the error message of a turn deleted before it settled.
const messageTurnDeleted = "the turn was deleted before it settled"

// goneTurn is the placeholder of a deleted turn, from what the run's status
// kept of it. One deleted before it settled is failed as infra.
func goneTurn(run *twv1.AgentRun, ref twv1.TurnRef) twv1.AgentTurn {
	t := twv1.AgentTurn{
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: run.Namespace},
		Spec: twv1.AgentTurnSpec{RunName: run.Name, Attempt: ref.Attempt,
			Epoch: run.Status.Epoch, ConversationID: run.Status.ConversationID},
		Status: twv1.AgentTurnStatus{Outcome: ref.Outcome, Steps: ref.Steps, CostUSD: ref.CostUSD, StreamCostUSD: ref.StreamCostUSD},
	}
	if ref.ErrorType != "" {
		t.Status.Error = &twv1.TurnError{Type: ref.ErrorType}
	}
	if ref.Outcome == "" {
		// It ran until now: its sidecar's latest report counts.
		shared.SetTurnCounts(&t.Status, shared.LiveCounts(ref, run.Status.Progress))
		t.Status.Outcome = twv1.TurnFailed
		t.Status.Error = &twv1.TurnError{Type: twv1.ClassInfra, Message: messageTurnDeleted}
	}
	return t
}
