package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The run folds a Pod's Progress into its status, except a Progress that
// came with the trip: the settled turn brings those counts a moment later,
// and folding them first costs one more write of the run's status.
func TestProgressMovedSkipsTrips(t *testing.T) {
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: conds}}
	}
	progress := func(msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: protocol.ConditionProgress, Status: corev1.ConditionTrue, Reason: protocol.ReasonRunning, Message: msg}
	}
	tripped := corev1.PodCondition{Type: protocol.ConditionTripped, Status: corev1.ConditionTrue, Reason: "IdenticalCalls"}
	for _, c := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"progress moved", pod(progress(`{"steps":1}`)), pod(progress(`{"steps":2}`)), true},
		{"first progress", pod(), pod(progress(`{"steps":1}`)), true},
		{"nothing moved", pod(progress(`{"steps":1}`)), pod(progress(`{"steps":1}`)), false},
		{"progress with the trip", pod(progress(`{"steps":1}`)), pod(progress(`{"steps":4}`), tripped), false},
		{"the trip alone", pod(progress(`{"steps":4}`)), pod(progress(`{"steps":4}`), tripped), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := progressMoved.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
				t.Errorf("progressMoved = %v, want %v", got, c.want)
			}
		})
	}
}
