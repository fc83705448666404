package agentturn

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A trip on a Pod that serves its model leaves a running agent
// ModelTripGrace to end by itself; any other trip settles at once, and so
// does one whose agent ended or whose grace passed.
func TestHoldForAgent(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	podOf := func(model bool, tripAgo time.Duration, agent corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
		if model {
			p.Labels[twv1.LabelModelPort] = "20001"
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: protocol.ConditionTripped, Status: corev1.ConditionTrue,
			Reason: "IdenticalCalls", Message: "x", LastTransitionTime: metav1.NewTime(now.Add(-tripAgo))}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: agent}}
		return p
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	ended := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		held time.Duration // 0: settles now
	}{
		{"a model's running agent, just tripped", podOf(true, time.Second, running), ModelTripGrace - time.Second},
		{"the grace passed", podOf(true, ModelTripGrace, running), 0},
		{"the agent ended by itself", podOf(true, time.Second, ended), 0},
		{"a Pod that serves no model", podOf(false, time.Second, running), 0},
		{"a trip time ahead of the controller's clock", podOf(true, -time.Minute, running), ModelTripGrace},
	} {
		v := holdForAgent(Judge(c.pod, "agent", now, time.Minute), c.pod, "agent", now)
		switch {
		case c.held == 0 && (v.Outcome != twv1.TurnFailed || !v.tripped):
			t.Errorf("%s: %q, want settled as tripped", c.name, v.Outcome)
		case c.held > 0 && (v.Outcome != "" || v.recheck != c.held):
			t.Errorf("%s: %q recheck %s, want held %s", c.name, v.Outcome, v.recheck, c.held)
		}
	}
}
