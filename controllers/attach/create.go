package attach

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// EventGuardsInvalid is the reason of the Warning Event on an attached
// Pod's turn whose guards annotation could not be read: the turn has the
// namespace's guards, and so has the Pod (the admission policy reads the
// annotation the same way).
const EventGuardsInvalid = "GuardsInvalid"

// record creates the Pod's turn: its guards and audited detectors resolved
// from the manager's defaults, the namespace's policies and the Pod's
// annotation, its attempt counted among its owner's turns, and the budget
// finalizer where a budget applies. The creation's event brings the turn
// back to follow the Pod.
func (r *Reconciler) record(ctx context.Context, pod *corev1.Pod) (ctrl.Result, error) {
	now := r.Clock.Now()
	if r.created.Stale(pod.UID, false, now) {
		return ctrl.Result{RequeueAfter: time.Second}, nil // created; the cache lags
	}
	attempt, err := r.attempt(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	turn := TurnFor(pod, attempt)
	policies, err := turnpolicy.PoliciesFor(ctx, r.Client, pod.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	asked, invalid := PodGuards(pod)
	turn.Spec.Guards, turn.Spec.Audit = turnpolicy.ResolveGuards(turnpolicy.GuardInputs{Defaults: r.Config.Guards, Policies: policies, Run: asked})
	if turnpolicy.AnyBudget(policies) {
		controllerutil.AddFinalizer(turn, twv1.BudgetFinalizer)
	}
	if err := r.Create(ctx, turn); err != nil {
		if apierrors.IsInvalid(err) {
			// A watch label that names no format, say: no retry mends it.
			log.FromContext(ctx).Info("the attached pod's turn was refused; not recorded", "pod", pod.Name, "error", err.Error())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	r.created.Wrote(pod.UID, true, now)
	log.FromContext(ctx).Info("recorded attached pod", "pod", pod.Name, "owner", turn.Spec.PodRef.Owner, "attempt", attempt)
	if invalid != nil {
		r.Recorder.Eventf(turn, pod, corev1.EventTypeWarning, EventGuardsInvalid, "Record",
			"turn %s: %s; the namespace's guards apply", turn.Name, invalid.Error())
	}
	return ctrl.Result{}, nil
}

// attempt is how many attached turns of the Pod's owner there are
// already: a Job's second Pod (its backoffLimit's retry) is attempt 1. A
// Pod no one controls is attempt 0. Read from the API server: the cache
// may not show the turn of the Pod just before.
func (r *Reconciler) attempt(ctx context.Context, pod *corev1.Pod) (int32, error) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return 0, nil
	}
	var list twv1.AgentTurnList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(pod.Namespace), client.MatchingLabels{LabelOwnerUID: string(owner.UID)}); err != nil {
		return 0, err
	}
	n := int32(0)
	for _, t := range list.Items {
		if t.Spec.PodRef != nil && t.Spec.PodRef.UID != string(pod.UID) {
			n++
		}
	}
	return n, nil
}
