package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// podWarnings reads the sidecar's protocol.Warnings off its Pod: reason ->
// message, for each one set.
func podWarnings(get func(string) string) map[string]string {
	var out map[string]string
	for _, w := range protocol.Warnings {
		if msg := get(w.Condition); msg != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[w.Reason] = msg
		}
	}
	return out
}

// markWarnings sets one turn condition per warning the sidecar reported
// (its type is the warning's reason), once: it returns the reasons this
// pass added, in protocol.Warnings' order, so that each one Warning Event
// goes out after the write that recorded it, and a pass that lost a
// conflict and read the turn again does not tell it twice.
func markWarnings(st *twv1.AgentTurnStatus, warnings map[string]string, generation int64, now time.Time) []string {
	var added []string
	for _, w := range protocol.Warnings {
		msg := warnings[w.Reason]
		if msg == "" || meta.FindStatusCondition(st.Conditions, w.Reason) != nil {
			continue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: w.Reason, Status: metav1.ConditionTrue, Reason: w.Reason,
			Message: msg, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
		})
		added = append(added, w.Reason)
	}
	return added
}
