package shared

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The cache keeps neither managedFields nor prompts nor the Pods' env.
func TestCacheTrims(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	run := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf}, Spec: twv1.AgentRunSpec{Prompt: "p", Format: twv1.FormatPi}}
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf}, Spec: twv1.AgentTurnSpec{Prompt: "p", RunName: "r"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf, Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "s", Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}},
		Containers:     []corev1.Container{{Name: "agent", Env: []corev1.EnvVar{{Name: protocol.EnvPrompt, Value: "p"}}}},
	}}
	_, _ = TrimRun(run)
	_, _ = TrimTurn(turn)
	_, _ = TrimPod(pod)
	if run.ManagedFields != nil || run.Spec.Prompt != "" || run.Spec.Format != twv1.FormatPi {
		t.Errorf("run %+v", run)
	}
	if turn.ManagedFields != nil || turn.Spec.Prompt != "" || turn.Spec.RunName != "r" {
		t.Errorf("turn %+v", turn)
	}
	if pod.ManagedFields != nil || pod.Spec.InitContainers[0].Env != nil || pod.Spec.Containers[0].Env != nil ||
		pod.Spec.Containers[0].Name != "agent" || pod.Labels["a"] != "b" {
		t.Errorf("pod %+v", pod)
	}
}
