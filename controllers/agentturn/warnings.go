package agentturn

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// MarkWarnings sets one turn condition per warning the sidecar reported
// (its type is the warning's reason), once: it returns the reasons this
// pass added, in protocol.Warnings' order, so that each one Warning Event
// goes out after the write that recorded it, and a pass that lost a
// conflict and read the turn again does not tell it twice.
func MarkWarnings(st *twv1.AgentTurnStatus, warnings map[string]string, generation int64, now time.Time) []string {
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

// RaiseCounts raises the turn's counts with the sidecar's reports, oldest
// first: what its run's status showed (held back while it ran; once it
// settles), its Pod's
// Progress, its latest (the summary). A report below what the turn counted
// leaves the higher figure and is noted as CostMismatch, unless the
// sidecar noted one itself.
func RaiseCounts(counts *shared.CountsThrottle, uid types.UID, st *twv1.AgentTurnStatus, v *Verdict) {
	var note string
	// What the run's status showed is raised into the turn only as it
	// settles: while it runs, the run's status carries it already, and a
	// write of the turn per report is what the throttle saves
	// (shared/status_freshness.go).
	if held, ok := counts.Held(uid); ok && v.Outcome != "" {
		shared.SetTurnCounts(st, held)
	}
	for _, p := range []*protocol.Progress{v.Progress, v.Counts} {
		if p != nil {
			if n := shared.SetTurnCounts(st, *p); note == "" {
				note = n
			}
		}
	}
	if note == "" || v.Warnings[protocol.ReasonCostMismatch] != "" {
		return
	}
	if v.Warnings == nil {
		v.Warnings = map[string]string{}
	}
	v.Warnings[protocol.ReasonCostMismatch] = note
}
