package agentturn

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestMarkWarnings(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	const blind, hooks = "the stream shows no deltas: degeneration cannot be seen", "no turnwatch hook ran"
	tests := []struct {
		name     string
		warnings map[string]string
		had      map[string]string
		added    []string
	}{
		{"no report", nil, nil, nil},
		{"first report", map[string]string{twv1.TurnConditionDeltasHidden: blind}, nil, []string{twv1.TurnConditionDeltasHidden}},
		{"already set", map[string]string{twv1.TurnConditionDeltasHidden: blind}, map[string]string{twv1.TurnConditionDeltasHidden: blind}, nil},
		{"both, in the table's order", map[string]string{twv1.TurnConditionHooksNotRun: hooks, twv1.TurnConditionDeltasHidden: blind}, nil,
			[]string{twv1.TurnConditionDeltasHidden, twv1.TurnConditionHooksNotRun}},
		{"one new beside one set", map[string]string{twv1.TurnConditionHooksNotRun: hooks, twv1.TurnConditionDeltasHidden: blind},
			map[string]string{twv1.TurnConditionDeltasHidden: blind}, []string{twv1.TurnConditionHooksNotRun}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &twv1.AgentTurnStatus{}
			MarkWarnings(st, tt.had, 1, now.Add(-time.Minute))
			if got := MarkWarnings(st, tt.warnings, 1, now); !slices.Equal(got, tt.added) {
				t.Errorf("added %v, want %v", got, tt.added)
			}
			for reason, msg := range tt.warnings {
				c := meta.FindStatusCondition(st.Conditions, reason)
				if c == nil || c.Message != msg || (tt.had[reason] != "" && !c.LastTransitionTime.Time.Before(now)) {
					t.Errorf("condition %+v: want the first report's, kept", c)
				}
			}
		})
	}
}

// A turn's counts only grow: a report below what the turn counted (its
// own status, its run's progress, its Pod's Progress) leaves the higher
// figure, and the turn notes CostMismatch unless the sidecar did. The
// run's progress is raised into the turn as it settles, not per report.
func TestRaiseCounts(t *testing.T) {
	const uid = "turn-uid"
	tests := []struct {
		name           string
		had            twv1.AgentTurnStatus
		held, progress *protocol.Progress
		latest         *protocol.Progress
		sidecarNote    string
		steps          int64
		cost, note     string
	}{
		{"nothing reported", twv1.AgentTurnStatus{}, nil, nil, nil, "", 0, "", ""},
		{"a summary past the progress", twv1.AgentTurnStatus{}, nil, ptr.To(counts(3, "10")), ptr.To(counts(4, "12")), "", 4, "12.00", ""},
		{"a summary below the Pod's progress", twv1.AgentTurnStatus{}, nil, ptr.To(counts(3, "50")), ptr.To(counts(4, "0")), "", 4, "50.00",
			"the sidecar reported $0.00 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"a summary below the run's progress", twv1.AgentTurnStatus{}, ptr.To(counts(3, "50")), nil, ptr.To(counts(3, "0")), "", 3, "50.00",
			"the sidecar reported $0.00 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"a summary below the turn's own", twv1.AgentTurnStatus{Steps: 2, CostUSD: "50.00"}, nil, nil, ptr.To(counts(1, "0.5")), "", 2, "50.00",
			"the sidecar reported $0.50 for the turn, below the $50.00 reported before: the turn keeps $50.00"},
		{"fewer steps, more cost", twv1.AgentTurnStatus{Steps: 5, CostUSD: "1"}, nil, nil, ptr.To(counts(4, "2")), "", 5, "2.00", ""},
		{"while it runs, the run's progress stays in the run's status", twv1.AgentTurnStatus{}, ptr.To(counts(3, "50")), nil, nil, "", 0, "", ""},
		{"the sidecar's own note stands", twv1.AgentTurnStatus{}, nil, ptr.To(counts(3, "50")), ptr.To(counts(3, "0")), "line 9 reported $0.00", 3, "50.00",
			"line 9 reported $0.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &AgentTurnReconciler{}
			r.Counts.Observe(uid, tt.held)
			st := tt.had.DeepCopy()
			v := Verdict{Progress: tt.progress, Counts: tt.latest}
			if tt.latest != nil {
				v.Outcome = twv1.TurnSucceeded // a summary settles the turn
			}
			if tt.sidecarNote != "" {
				v.Warnings = map[string]string{protocol.ReasonCostMismatch: tt.sidecarNote}
			}
			RaiseCounts(&r.Counts, uid, st, &v)
			if st.Steps != tt.steps || st.CostUSD != tt.cost {
				t.Errorf("counts %d %s, want %d %s", st.Steps, st.CostUSD, tt.steps, tt.cost)
			}
			if got := v.Warnings[protocol.ReasonCostMismatch]; got != tt.note {
				t.Errorf("note %q, want %q", got, tt.note)
			}
		})
	}
}
