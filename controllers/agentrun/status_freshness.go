package agentrun

import (
	"context"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// withLiveCounts gives each running turn the counts the run's status
// already showed for it, when they are ahead of the turn's own copy: a
// running turn's counts never go back in the run's status. Its sidecar's
// newer reports live in status.progress (liveTotals adds them), not in
// status.turns: putting them there would make every report cost the
// controller a write of its own. Steps and cost stay per turn, and the
// run's are their sum (setTotals).
func (r *AgentRunReconciler) withLiveCounts(_ context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn) []twv1.AgentTurn {
	for i := range turns {
		t := &turns[i]
		if t.Status.Outcome != "" {
			continue
		}
		for _, shown := range run.Status.Turns {
			if c, err := protocol.ParseProgress(shown.Steps, shown.CostUSD); err == nil && shown.Name == t.Name && shared.CountsAhead(c, t.Status) {
				shared.SetTurnCounts(&t.Status, c)
			}
		}
	}
	return turns
}
