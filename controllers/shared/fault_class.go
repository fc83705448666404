package shared

import (
	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// ClassOf is the fault class a detector's trip gives (monitor.ClassOf). An
// unknown detector (a newer sidecar than this controller) is taken as
// runaway: the sidecar said the turn must end, and runaway is the class of
// "it would not stop".
func ClassOf(detector string) twv1.FaultClass {
	if c := monitor.ClassOf(detector); c != "" {
		return twv1.FaultClass(c)
	}
	return twv1.ClassRunaway
}
