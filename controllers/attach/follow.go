package attach

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// follow reads the attached Pod and records what it says, in one status
// write per pass, as the AgentTurnReconciler does for a run's turn: the
// same verdict (agentturn.Judge), counts, reports, warnings and nudges.
// A trip stops the Pod before the write, and so does a spent budget of the
// namespace (as overspend, at the first report of a Pod that started while
// it was spent: admission never waits on the manager); the Events follow
// the write.
func (r *Reconciler) follow(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	now := r.Clock.Now()
	v := agentturn.Judge(pod, turn.Spec.PodRef.AgentContainer, now, r.Config.SettleGrace.Duration)
	stop := v.Tripped()
	if e := r.budgetStop(ctx, turn.Namespace); v.Outcome == "" && e != nil {
		v.Outcome, v.Err, stop = twv1.TurnFailed, e, true
	}
	st := turn.Status.DeepCopy()
	observe(st, pod, turn.Generation, now)
	agentturn.RaiseCounts(&r.Counts, turn.UID, st, &v)
	agentturn.SetTurnReports(st, v)
	warned := agentturn.MarkWarnings(st, v.Warnings, turn.Generation, now)
	seen := st.Nudges
	if v.Nudge != "" {
		st.Nudges = max(st.Nudges, int32(protocol.NudgeStreak(v.Nudge)))
	}
	if v.Outcome != "" {
		agentturn.Settle(st, v.Outcome, v.Err, now)
		if stop {
			// Stop first: every second the agent runs on costs money.
			if err := r.stop(ctx, pod); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	recheck := v.Recheck()
	if wait := agentturn.HoldCounts(&r.Counts, turn, st, now, shared.TurnRefreshFactor*r.Config.Freshness()); wait > 0 {
		recheck = minPositive(recheck, wait)
	}
	would := agentturn.WouldTripDetectors(&turn.Status)
	if err := r.writeStatus(ctx, turn, st); err != nil {
		return ctrl.Result{}, err
	}
	agentturn.RecordWouldTrips(r.Recorder, turn, turn, would)
	agentturn.RecordNudges(r.Recorder, turn, turn, seen, v.Nudge)
	for _, reason := range warned {
		r.Recorder.Eventf(turn, pod, corev1.EventTypeWarning, reason, reason, "turn %s: %s", turn.Name, v.Warnings[reason])
		shared.WarningsTotal.WithLabelValues(reason, shared.DrillLabel(turn.Labels)).Inc()
	}
	if v.Outcome != "" {
		r.recordSettled(ctx, turn, pod, v.Tripped())
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// observe records, once, what the turn knows of its Pod from the start:
// its name, its start, and whether its agent could forge its verdict
// (Forgeable). They go out with the pass's other changes, in one write.
func observe(st *twv1.AgentTurnStatus, pod *corev1.Pod, generation int64, now time.Time) {
	if st.PodName == "" {
		st.PodName = pod.Name
	}
	if st.StartTime == nil {
		st.StartTime = startTime(pod)
	}
	if msg := Forgeable(pod); msg != "" && meta.FindStatusCondition(st.Conditions, twv1.TurnConditionForgeable) == nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: twv1.TurnConditionForgeable, Status: metav1.ConditionTrue, Reason: twv1.TurnConditionForgeable,
			Message: msg, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
		})
	}
}

// budgetStop is the error a running attached turn is stopped with when a
// budget of the namespace is exhausted, or nil. Policies that cannot be
// read stop nothing.
func (r *Reconciler) budgetStop(ctx context.Context, ns string) *twv1.TurnError {
	pols, err := turnpolicy.PoliciesFor(ctx, r.Client, ns)
	if err != nil {
		log.FromContext(ctx).Info("policies not read; budgets not checked", "error", err.Error())
		return nil
	}
	return turnpolicy.BudgetStop(pols)
}

// lateReports records what the sidecar reported after the turn settled:
// the call its hook refused after the trip, the last would-trip counts
// (agentturn's lateReports, for a run's turn).
func (r *Reconciler) lateReports(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) error {
	v := agentturn.Judge(pod, turn.Spec.PodRef.AgentContainer, r.Clock.Now(), r.Config.SettleGrace.Duration)
	st := turn.Status.DeepCopy()
	agentturn.SetTurnReports(st, v)
	before := agentturn.WouldTripDetectors(&turn.Status)
	if err := r.writeStatus(ctx, turn, st); err != nil {
		return err
	}
	agentturn.RecordWouldTrips(r.Recorder, turn, turn, before)
	return nil
}
