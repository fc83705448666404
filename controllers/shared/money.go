package shared

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

// ParseUSD reads a decimal string ("0.0123"); "" is zero.
func ParseUSD(s string) (monitor.Money, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	m, err := monitor.ParseMoney(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal", s)
	}
	return m, nil
}

// SumUSD adds decimal strings; an unreadable one counts as zero (it came from
// a sidecar, and a bad number must not stop the run's bookkeeping).
func SumUSD(values ...string) string {
	var total monitor.Money
	for _, v := range values {
		if m, err := ParseUSD(v); err == nil {
			total = total.Add(m)
		}
	}
	return total.String()
}

// SetTurnCounts raises a turn's counts to p, field by field: counts only
// grow within a turn (docs/design.md#a-cost-never-goes-down), so a report
// below what the turn counted (a summary lower than the progress before
// it, a Pod condition written by hand) leaves the higher figure. It
// returns the note when p's cost is below the turn's (CostMismatch), ""
// otherwise.
func SetTurnCounts(st *twv1.AgentTurnStatus, p protocol.Progress) string {
	was := turnCounts(*st)
	st.Steps, st.CostUSD = max(was.Steps, p.Steps), max(was.Cost, p.Cost).String()
	if p.Cost >= was.Cost {
		return ""
	}
	return "the sidecar reported $" + p.CostUSD() + " for the turn, below the $" + was.CostUSD() +
		" reported before: the turn keeps $" + was.CostUSD()
}

// UsdFloat is a decimal string as a float, for metrics only.
func UsdFloat(s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return 0
	}
	return f
}
