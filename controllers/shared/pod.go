package shared

import (
	corev1 "k8s.io/api/core/v1"
)

func PodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
