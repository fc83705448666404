// Package attach records the Pods that turnwatch did not create but
// guards (docs/attach.md): a Pod labelled turnwatch.dev/watch in a
// namespace labelled turnwatch.dev/attach, into which the admission policy
// turnwatch-attach injected the sidecar. Each gets an AgentTurn of its
// name (spec.podRef, no run), which follows the Pod as the
// AgentTurnReconciler follows a run's turn's Pod, and a trip stops the Pod
// the Kubernetes way: it fails, and its owner decides what follows.
package attach

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/attachns"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Labels of an attached Pod's turn, by which `kubectl get agentturns -l`
// finds the attached turns (LabelPod exists) and the turns of one owner,
// a Job's say (LabelOwnerUID=UID).
const (
	// LabelPod is the attached Pod's name.
	LabelPod = "turnwatch.dev/pod"
	// LabelOwnerUID is the UID of the Pod's controller (a Job, a Sandbox),
	// absent for a Pod no one controls. Its attached turns are counted for
	// a new turn's attempt.
	LabelOwnerUID = "turnwatch.dev/owner-uid"
)

// Attached says whether pod is an attached Pod: it asks to be watched
// (LabelWatch), its namespace consents (LabelAttach), and the admission
// policy injected the sidecar. A Pod labelled in a namespace that did not
// consent, or created before the policy's parameters existed, has no
// sidecar and no turn.
func Attached(pod *corev1.Pod, ns *corev1.Namespace) bool {
	if pod.Labels[twv1.LabelWatch] == "" || !attachns.Enabled(ns) {
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == protocol.SidecarContainerName {
			return true
		}
	}
	return false
}

// AgentContainer is the container whose stream the sidecar follows: the
// Pod's LabelAgentContainer, or its first container.
func AgentContainer(pod *corev1.Pod) string {
	if name := pod.Labels[twv1.LabelAgentContainer]; name != "" {
		return name
	}
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	return pod.Spec.Containers[0].Name
}

// ownerName is the Pod's controller as "Kind/Name", or "".
func ownerName(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// TurnFor is the AgentTurn that records pod, its attempt-th of its owner:
// named as the Pod, owned by it (so that it goes with the Pod), and
// labelled so that it can be found by Pod and by owner. Its guards are
// set by the caller (turnpolicy.ResolveGuards).
func TurnFor(pod *corev1.Pod, attempt int32) *twv1.AgentTurn {
	labels := map[string]string{LabelPod: pod.Name}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		labels[LabelOwnerUID] = string(ref.UID)
	}
	yes := true
	return &twv1.AgentTurn{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes,
			}},
		},
		Spec: twv1.AgentTurnSpec{
			PodRef: &twv1.AttachedPod{
				Name: pod.Name, UID: string(pod.UID), Format: twv1.Format(pod.Labels[twv1.LabelWatch]),
				AgentContainer: AgentContainer(pod), Owner: ownerName(pod),
			},
			Attempt: attempt,
		},
	}
}

// PodGuards are the guards the Pod's AnnotationGuards asks for; nil when
// it has none. An annotation the sidecar does not read either (it checks
// it with the same validator, monitor.ParseGuards: an unknown guard, a bad
// value) is an error: the namespace's guards hold on both sides.
func PodGuards(pod *corev1.Pod) (*twv1.Guards, error) {
	raw, ok := pod.Annotations[twv1.AnnotationGuards]
	if !ok {
		return nil, nil
	}
	if _, err := monitor.ParseGuards([]byte(raw)); err != nil {
		return nil, fmt.Errorf("the annotation %s does not read: %w", twv1.AnnotationGuards, err)
	}
	g := &twv1.Guards{}
	if err := json.Unmarshal([]byte(raw), g); err != nil {
		return nil, fmt.Errorf("the annotation %s does not read: %w", twv1.AnnotationGuards, err)
	}
	return g, nil
}

// isTurnOf says whether turn records pod: a turn of the Pod's name that
// records another Pod (an earlier Pod of that name), or belongs to a run,
// is never taken over.
func isTurnOf(turn *twv1.AgentTurn, pod *corev1.Pod) bool {
	return turn.Spec.PodRef != nil && turn.Spec.PodRef.UID == string(pod.UID)
}
