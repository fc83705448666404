package controllers

import (
	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// Detector names (SPEC.md).
const (
	DetectorStepBudget     = "stepBudget"
	DetectorIdenticalCalls = "identicalCalls"
	DetectorSilentRun      = "silentRun"
	DetectorStall          = "stall"
	DetectorDegeneration   = "degeneration"
	DetectorSpend          = "spend"
	DetectorLengthStop     = "lengthStop"
)

// classOf is the fault class a detector's trip gives. An unknown detector (a
// newer sidecar than this controller) is taken as runaway: the sidecar said
// the turn must end, and runaway is the class of "it would not stop".
//
// TODO(integration): swap for monitor.ClassOf once pkg/monitor lands.
func classOf(detector string) twv1.FaultClass {
	switch detector {
	case DetectorStepBudget, DetectorIdenticalCalls:
		return twv1.ClassRunaway
	case DetectorStall:
		return twv1.ClassStalled
	case DetectorDegeneration:
		return twv1.ClassDegenerate
	case DetectorSpend:
		return twv1.ClassOverspend
	case DetectorLengthStop:
		return twv1.ClassLength
	}
	return twv1.ClassRunaway
}
