package agentturn

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// HoldCounts keeps a running turn's counts as they are when they are all
// that changed and the turn's last counts write is less than every ago: the
// run's status carries them fresh already (withLiveCounts). It returns when
// to look again.
func HoldCounts(counts *shared.CountsThrottle, turn *twv1.AgentTurn, st *twv1.AgentTurnStatus, now time.Time, every time.Duration) time.Duration {
	if st.Outcome != "" || equality.Semantic.DeepEqual(*st, turn.Status) || !shared.CountsOnly(turn.Status, *st) {
		return 0
	}
	wait := counts.Hold(turn.UID, st, now, every)
	if wait > 0 {
		st.Steps, st.CostUSD = turn.Status.Steps, turn.Status.CostUSD
	}
	return wait
}
