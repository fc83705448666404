package shared

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func Finished(p twv1.RunPhase) bool {
	return p == twv1.RunSucceeded || p == twv1.RunFaulted || p == twv1.RunAborted
}

func PtrTime(t metav1.Time) *metav1.Time { return &t }
