package shared

import (
	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Detector names (docs/design.md#the-detectors-and-the-reasons-for-their-numbers), as the engine names them.
const (
	DetectorStepBudget     = monitor.DetectorStepBudget
	DetectorIdenticalCalls = monitor.DetectorIdenticalCalls
	DetectorSilentRun      = monitor.DetectorSilentRun
	DetectorStall          = monitor.DetectorStall
	DetectorDegeneration   = monitor.DetectorDegeneration
	DetectorSpend          = monitor.DetectorSpend
	DetectorLengthStop     = monitor.DetectorLengthStop
	DetectorCycles         = monitor.DetectorCycles
	DetectorRepeatedErrors = monitor.DetectorRepeatedErrors
	DetectorRepetition     = monitor.DetectorRepetition
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
