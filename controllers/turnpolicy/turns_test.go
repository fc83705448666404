package turnpolicy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// A turn's cost is final when it settled, or when it is deleted with no
// run to settle it: an attached Pod's turn has none (it goes with its Pod,
// settled or not). A run's deleted turn asks for its run (envtest:
// TestBudgetCountsTurnOfDeletedRun).
func TestCountableWithoutRun(t *testing.T) {
	deleting := &metav1.Time{Time: t0}
	attached := &twv1.AttachedPod{Name: "p", UID: "u"}
	for _, tt := range []struct {
		name string
		turn twv1.AgentTurn
		want bool
	}{
		{"settled", twv1.AgentTurn{Status: twv1.AgentTurnStatus{Outcome: twv1.TurnFailed}}, true},
		{"running", twv1.AgentTurn{Spec: twv1.AgentTurnSpec{PodRef: attached}}, false},
		{"an attached Pod's, deleted running", twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: deleting},
			Spec: twv1.AgentTurnSpec{PodRef: attached}}, true},
	} {
		// No client: none of these asks for a run.
		if got := (&TurnPolicyReconciler{}).countable(context.Background(), &tt.turn); got != tt.want {
			t.Errorf("%s: countable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
