package agentrun

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// Runs of one session share a conversation, so they run one at a time, in
// creation order; and a continue resumes only a conversation that exists.

// ConditionWaiting is True on a Pending run of a session while another run
// of the session goes first; its message names that run.
const ConditionWaiting = "Waiting"

// ReasonSessionBusy: another run of the session runs, or was created before
// this one and has not finished.
const ReasonSessionBusy = "sessionBusy"

// sessionRuns are the other runs of run's session in its namespace, read
// from the cache by spec (not by label: a run made a moment ago may not
// carry its session label yet).
func (r *AgentRunReconciler) sessionRuns(ctx context.Context, run *twv1.AgentRun) ([]twv1.AgentRun, error) {
	var list twv1.AgentRunList
	if err := r.List(ctx, &list, client.InNamespace(run.Namespace)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(o twv1.AgentRun) bool {
		return o.UID == run.UID || o.Spec.Session != run.Spec.Session
	}), nil
}

// before says whether a was created before b: creation time, then name.
func before(a, b *twv1.AgentRun) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}

// sessionBusy names the run that run must wait for before its first turn,
// or "" when it may start: every earlier run of the session must have
// Finished, and no other run of it may be under way (a later one that
// started anyway, seen through a stale cache, still goes first). It is pure.
func sessionBusy(run *twv1.AgentRun, peers []twv1.AgentRun) string {
	wait := ""
	var first *twv1.AgentRun
	for i := range peers {
		p := &peers[i]
		if shared.Finished(p.Status.Phase) {
			continue
		}
		started := p.Status.Attempts > 0
		if !started && !before(p, run) {
			continue
		}
		if first == nil || before(p, first) {
			first, wait = p, p.Name
		}
	}
	return wait
}

// sessionWaitMessage is the Waiting condition's message.
func sessionWaitMessage(session, waitFor string) string {
	return fmt.Sprintf("waits for run %s of session %s to finish", waitFor, session)
}

// agentRan says whether a turn's agent started and so may have written its
// conversation: it succeeded, or the sidecar counted steps or cost, or it
// failed on a verdict about its own stream (any class but infra: a trip, a
// length stop, an exit without a result). A turn that failed as infra with
// nothing counted, or was aborted with nothing counted, may never have
// started its agent; a continue does not bet on it.
func agentRan(t *twv1.AgentTurn) bool {
	if t.Status.Outcome == twv1.TurnSucceeded || t.Status.Steps > 0 {
		return true
	}
	if c, err := shared.ParseUSD(t.Status.CostUSD); err == nil && c > 0 {
		return true
	}
	return t.Status.Outcome == twv1.TurnFailed && ErrorType(t) != twv1.ClassInfra && ErrorType(t) != ""
}

// resumable says whether a turn of the session ran its agent in the
// conversation of epoch: only then is there something to continue.
func resumable(sessionTurns []twv1.AgentTurn, epoch int64) bool {
	return slices.ContainsFunc(sessionTurns, func(t twv1.AgentTurn) bool {
		return t.Spec.Epoch == epoch && agentRan(&t)
	})
}

// agentSessionOf is the CLI's own session id to resume in the conversation
// of epoch: that of the session's newest turn there whose stream named one.
func agentSessionOf(sessionTurns []twv1.AgentTurn, epoch int64) string {
	var newest *twv1.AgentTurn
	for i := range sessionTurns {
		t := &sessionTurns[i]
		if t.Spec.Epoch != epoch || t.Status.AgentSessionID == "" {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&t.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&t.CreationTimestamp) && newest.Name < t.Name) {
			newest = t
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Status.AgentSessionID
}

// sessionTurns are the turns of the session's runs in the namespace.
func (r *AgentRunReconciler) sessionTurns(ctx context.Context, run *twv1.AgentRun) ([]twv1.AgentTurn, error) {
	var list twv1.AgentTurnList
	err := r.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{twv1.LabelSession: run.Spec.Session})
	return list.Items, err
}

// sessionPhaseChanged passes the run events that can free a waiting run of
// the same session: a phase change, a deletion.
var sessionPhaseChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.(*twv1.AgentRun)
		n, okN := e.ObjectNew.(*twv1.AgentRun)
		return okO && okN && n.Spec.Session != "" && o.Status.Phase != n.Status.Phase
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(e event.DeleteEvent) bool { r, ok := e.Object.(*twv1.AgentRun); return ok && r.Spec.Session != "" },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// sessionWaiters are the Pending runs of obj's session, which may start now.
func (r *AgentRunReconciler) sessionWaiters(ctx context.Context, obj client.Object) []reconcile.Request {
	run, ok := obj.(*twv1.AgentRun)
	if !ok || run.Spec.Session == "" {
		return nil
	}
	peers, err := r.sessionRuns(ctx, run)
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range peers {
		if p.Status.Attempts == 0 && !shared.Finished(p.Status.Phase) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return reqs
}

// queue holds back the first turn of a session run while another run of the
// session goes first (decision stepQueue, naming it).
func (r *AgentRunReconciler) queue(ctx context.Context, run *twv1.AgentRun, d Decision) (Decision, error) {
	if d.Step != StepCreate || d.attempt != 0 || run.Spec.Session == "" {
		return d, nil
	}
	peers, err := r.sessionRuns(ctx, run)
	if err != nil {
		return d, err
	}
	if w := sessionBusy(run, peers); w != "" {
		return Decision{Step: stepQueue, waitFor: w}, nil
	}
	return d, nil
}

// setWaiting sets the Waiting condition of a queued run (and says it in
// Ready's message), and removes it once the run may start.
func setWaiting(st *twv1.AgentRunStatus, run *twv1.AgentRun, d Decision) {
	if d.Step != stepQueue {
		meta.RemoveStatusCondition(&st.Conditions, ConditionWaiting)
		return
	}
	msg := sessionWaitMessage(run.Spec.Session, d.waitFor)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: ConditionWaiting, Status: metav1.ConditionTrue, ObservedGeneration: st.ObservedGeneration,
		Reason: ReasonSessionBusy, Message: msg,
	})
	if ready := meta.FindStatusCondition(st.Conditions, ConditionReady); ready != nil {
		ready.Message = msg
	}
}
