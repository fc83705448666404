package protocol

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// WouldTrip is one audited detector's would-trips in the turn
// (docs/policies.md#audit), as ConditionWouldTrip's message lists them:
// the engine's record of them and when the sidecar first saw one.
type WouldTrip struct {
	monitor.WouldTrip
	Time time.Time `json:"time,omitzero"`
}

// WouldTripsOf pairs the engine's would-trips with when each detector's
// first was seen (first by detector; a detector without one has none).
func WouldTripsOf(ws []monitor.WouldTrip, first map[string]time.Time) []WouldTrip {
	if len(ws) == 0 {
		return nil
	}
	out := make([]WouldTrip, len(ws))
	for i, w := range ws {
		out[i] = WouldTrip{WouldTrip: w, Time: first[w.Detector]}
	}
	return out
}

// ParseWouldTrips reads ConditionWouldTrip's message; an unreadable one
// is none.
func ParseWouldTrips(message string) []WouldTrip {
	var ws []WouldTrip
	if json.Unmarshal([]byte(message), &ws) != nil {
		return nil
	}
	return ws
}

// ParseAudit reads EnvAudit: detector names, comma-separated, spaces and
// empty items ignored. The engine refuses unknown names (monitor.Options.Audit).
func ParseAudit(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// audited says whether the summary lists a would-trip of detector.
func (s Summary) audited(detector string) bool {
	return slices.ContainsFunc(s.WouldTrips, func(w WouldTrip) bool { return w.Detector == detector })
}
