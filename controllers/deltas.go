package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// markDeltasHidden sets the turn's DeltasHidden condition from the
// sidecar's message, once: it reports whether this pass added it (so the
// one Warning Event goes out after the write that recorded it, and a pass
// that lost a conflict and read the turn again does not tell it twice).
func markDeltasHidden(st *twv1.AgentTurnStatus, message string, generation int64, now time.Time) bool {
	if message == "" || meta.FindStatusCondition(st.Conditions, twv1.TurnConditionDeltasHidden) != nil {
		return false
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: twv1.TurnConditionDeltasHidden, Status: metav1.ConditionTrue, Reason: protocol.ReasonDeltasHidden,
		Message: message, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
	})
	return true
}
