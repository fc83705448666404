package shared

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestObserveSettled(t *testing.T) {
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		ns        string
		cost      string
		started   *metav1.Time
		completed *metav1.Time
		wantCost  float64
		wantObs   uint64 // duration samples added
	}{
		{"cost and duration", "metrics-a", "0.25", &metav1.Time{Time: start}, &metav1.Time{Time: start.Add(90 * time.Second)}, 0.25, 1},
		{"no start time: cost only", "metrics-b", "1.5", nil, &metav1.Time{Time: start}, 1.5, 0},
		{"no cost", "metrics-c", "", &metav1.Time{Time: start}, &metav1.Time{Time: start.Add(time.Second)}, 0, 1},
		{"clock skew: no negative duration", "metrics-d", "0.1", &metav1.Time{Time: start}, &metav1.Time{Time: start.Add(-time.Second)}, 0.1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome := twv1.TurnOutcome("Test-" + tt.ns)
			turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Namespace: tt.ns},
				Status: twv1.AgentTurnStatus{Outcome: outcome, CostUSD: tt.cost, StartTime: tt.started, CompletionTime: tt.completed}}
			ObserveSettled(turn)
			if got := promtestutil.ToFloat64(CostByNamespace.WithLabelValues(tt.ns)); got != tt.wantCost {
				t.Errorf("turnwatch_cost_usd_total{namespace=%q} = %v, want %v", tt.ns, got, tt.wantCost)
			}
			var m dto.Metric
			if err := turnDuration.WithLabelValues(string(outcome)).(prometheus.Histogram).Write(&m); err != nil {
				t.Fatal(err)
			}
			if got := m.GetHistogram().GetSampleCount(); got != tt.wantObs {
				t.Errorf("turnwatch_turn_duration_seconds{outcome=%q} has %d samples, want %d", outcome, got, tt.wantObs)
			}
		})
	}
}
