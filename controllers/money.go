package controllers

import (
	"fmt"
	"strings"

	"gopkg.in/inf.v0"
)

// parseUSD reads a decimal string ("0.0123"); "" is zero. Money is exact
// decimal arithmetic, never floats.
func parseUSD(s string) (*inf.Dec, error) {
	if strings.TrimSpace(s) == "" {
		return new(inf.Dec), nil
	}
	d, ok := new(inf.Dec).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal", s)
	}
	return d, nil
}

// sumUSD adds decimal strings; an unreadable one counts as zero (it came from
// a sidecar, and a bad number must not stop the run's bookkeeping).
func sumUSD(values ...string) string {
	total := new(inf.Dec)
	for _, v := range values {
		if d, err := parseUSD(v); err == nil {
			total.Add(total, d)
		}
	}
	return total.String()
}

// usdFloat is a decimal string as a float, for metrics only.
func usdFloat(s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return 0
	}
	return f
}
