package attach

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// Event reasons on an attached Pod's turn, and on its owner.
const (
	// EventTripped: the manager stopped the Pod (a detector tripped, or a
	// budget was spent); a Warning on the turn and on the Pod's owner,
	// naming the detector.
	EventTripped = "Tripped"
	// EventFailed: the turn failed otherwise (the agent's exit, a broken
	// container); the Pod is left to its owner.
	EventFailed = "Failed"
	// EventSucceeded: the agent finished with a final result.
	EventSucceeded = "Succeeded"
)

// recordSettled tells a settled turn: its Event (and, for a stop, its
// owner's), and the turn metrics a run's turn records.
func (r *Reconciler) recordSettled(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod, tripped bool) {
	st := &turn.Status
	switch {
	case st.Outcome == twv1.TurnSucceeded:
		r.Recorder.Eventf(turn, pod, corev1.EventTypeNormal, EventSucceeded, "Settle", "turn %s finished with a final result", turn.Name)
	case stoppedByManager(turn):
		r.Recorder.Eventf(turn, pod, corev1.EventTypeWarning, EventTripped, "Stop", "turn %s: %s tripped (%s): %s; the pod %s was stopped and fails",
			turn.Name, st.Error.Detector, st.Error.Type, st.Error.Message, pod.Name)
		r.tellOwner(pod, turn)
	case st.Error != nil:
		r.Recorder.Eventf(turn, pod, corev1.EventTypeWarning, EventFailed, "Settle", "turn %s failed (%s): %s", turn.Name, st.Error.Type, st.Error.Message)
	}
	shared.RecordSettled(turn, tripped)
	log.FromContext(ctx).Info("attached turn settled", "outcome", st.Outcome, "steps", st.Steps, "costUSD", st.CostUSD)
}

// tellOwner puts a Warning Event on the Pod's owner (the Job, the
// Sandbox...) naming the detector that stopped its Pod: `kubectl describe
// job` says why its Pod failed. A Pod no one controls has only its turn's.
func (r *Reconciler) tellOwner(pod *corev1.Pod, turn *twv1.AgentTurn) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	owner := &corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Namespace: pod.Namespace, UID: ref.UID}
	e := turn.Status.Error
	r.Recorder.Eventf(owner, turn, corev1.EventTypeWarning, EventTripped, "Stop", "pod %s stopped: %s tripped (%s): %s",
		pod.Name, e.Detector, e.Type, e.Message)
}
