package shared

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The metrics the chart's Grafana dashboard needs beyond metrics.go's:
// spend per namespace (who pays) and how long turns take. docs/metrics.md
// lists every metric.
var (
	CostByNamespace = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_cost_usd_total",
		Help: "Cost in USD of settled turns, by the namespace they ran in.",
	}, []string{"namespace"})
	turnDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "turnwatch_turn_duration_seconds",
		Help:    "Seconds from a turn's Pod creation to its outcome, by outcome.",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
	}, []string{"outcome"})
)

func init() {
	metrics.Registry.MustRegister(CostByNamespace, turnDuration)
}

// ObserveSettled records a settled turn's spend and duration.
func ObserveSettled(turn *twv1.AgentTurn) {
	st := &turn.Status
	CostByNamespace.WithLabelValues(turn.Namespace).Add(UsdFloat(st.CostUSD))
	if st.StartTime != nil && st.CompletionTime != nil {
		if d := st.CompletionTime.Sub(st.StartTime.Time); d >= 0 {
			turnDuration.WithLabelValues(string(st.Outcome)).Observe(d.Seconds())
		}
	}
}
