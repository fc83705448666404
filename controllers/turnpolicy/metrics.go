package turnpolicy

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"turnwatch.dev/turnwatch/controllers/shared"
)

// Budget gauges (docs/metrics.md), one series per policy with a budget:
// "TurnPolicy/NAMESPACE/NAME" or "ClusterTurnPolicy/NAME".
var (
	budgetSpent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "turnwatch_budget_spent_usd",
		Help: "A policy budget's spend in its current window (status.budget.spentUSD), in USD.",
	}, []string{"policy"})
	budgetLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "turnwatch_budget_limit_usd",
		Help: "A policy budget's maxCostUSD, in USD.",
	}, []string{"policy"})
)

func init() {
	metrics.Registry.MustRegister(budgetSpent, budgetLimit)
}

// policyMetricName is a policy's policy label: a request without a
// namespace is a ClusterTurnPolicy.
func policyMetricName(ns, name string) string {
	if ns == "" {
		return KindClusterTurnPolicy + "/" + name
	}
	return KindTurnPolicy + "/" + ns + "/" + name
}

// setBudgetMetrics sets a policy's gauges from its status, or drops them
// when it has no budget.
func setBudgetMetrics(pol AppliedPolicy) {
	name := policyMetricName(pol.Object.GetNamespace(), pol.Object.GetName())
	b, st := pol.Spec.Budget, pol.Status().Budget
	if b == nil || st == nil {
		forgetBudgetMetrics(name)
		return
	}
	budgetSpent.WithLabelValues(name).Set(shared.UsdFloat(st.SpentUSD))
	budgetLimit.WithLabelValues(name).Set(shared.UsdFloat(b.MaxCostUSD))
}

func forgetBudgetMetrics(name string) {
	budgetSpent.DeleteLabelValues(name)
	budgetLimit.DeleteLabelValues(name)
}
