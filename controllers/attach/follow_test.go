package attach

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// observe records the Pod's name, start and Forgeable once: a later pass
// keeps what the first recorded.
func TestObserve(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	created := metav1.NewTime(now.Add(-time.Minute))
	started := metav1.NewTime(now.Add(-30 * time.Second))
	forgeable := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x1"}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x1"}}
	}
	for _, tt := range []struct {
		name      string
		pod       *corev1.Pod
		start     metav1.Time
		forgeable bool
	}{
		{"not started", watchedPod(func(p *corev1.Pod) { p.CreationTimestamp = created }), created, false},
		{"started, forgeable", watchedPod(forgeable, func(p *corev1.Pod) { p.CreationTimestamp, p.Status.StartTime = created, &started }), started, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &twv1.AgentTurnStatus{}
			observe(st, tt.pod, 1, now)
			if st.PodName != tt.pod.Name || st.StartTime == nil || !st.StartTime.Equal(&tt.start) {
				t.Errorf("podName %q startTime %v, want %q %v", st.PodName, st.StartTime, tt.pod.Name, tt.start)
			}
			c := meta.FindStatusCondition(st.Conditions, twv1.TurnConditionForgeable)
			if (c != nil) != tt.forgeable || (c != nil && c.Status != metav1.ConditionTrue) {
				t.Fatalf("Forgeable condition %+v, want %v", c, tt.forgeable)
			}
			again := st.DeepCopy()
			later := tt.pod.DeepCopy() // its spec does not change; what the kubelet says does
			later.Name, later.Status.StartTime = "other", &metav1.Time{Time: now}
			observe(again, later, 2, now.Add(time.Hour))
			if !equalStatus(*st, *again) {
				t.Errorf("a later pass changed %+v into %+v", st, again)
			}
		})
	}
}

func equalStatus(a, b twv1.AgentTurnStatus) bool {
	if a.PodName != b.PodName || !a.StartTime.Equal(b.StartTime) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i] != b.Conditions[i] {
			return false
		}
	}
	return true
}
