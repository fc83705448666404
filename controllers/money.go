package controllers

import (
	"fmt"
	"strings"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Money is exact decimal arithmetic, never floats, and it is the engine's
// type (monitor.Money) from the sidecar's count to the run's status: one
// rounding rule, one rendering ("0.30", "1.3125"). Status fields stay
// decimal strings on the wire.

// parseUSD reads a decimal string ("0.0123"); "" is zero.
func parseUSD(s string) (monitor.Money, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	m, err := monitor.ParseMoney(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal", s)
	}
	return m, nil
}

// sumUSD adds decimal strings; an unreadable one counts as zero (it came from
// a sidecar, and a bad number must not stop the run's bookkeeping).
func sumUSD(values ...string) string {
	var total monitor.Money
	for _, v := range values {
		if m, err := parseUSD(v); err == nil {
			total = total.Add(m)
		}
	}
	return total.String()
}

// setTurnCounts writes p into a turn's status.
func setTurnCounts(st *twv1.AgentTurnStatus, p protocol.Progress) {
	st.Steps, st.CostUSD = p.Steps, p.CostUSD()
}

// usdFloat is a decimal string as a float, for metrics only.
func usdFloat(s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return 0
	}
	return f
}
