package shared

import (
	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A labelled series exists only once it is first touched, and Prometheus
// reads a counter that first appears at 1 as no increase at all: the first
// trip of each detector, reroll and fault of each class, would never show
// on a dashboard's increase() or rate() panel. So the label values known in
// advance start at zero when the manager starts.

// tripDetectors are the detectors whose trips end a turn: the detector
// table's rows that are not nudges.
var tripDetectors = func() (out []string) {
	for _, d := range monitor.Detectors() {
		if !d.Nudges() {
			out = append(out, d.Name)
		}
	}
	return out
}()

var faultClasses = []twv1.FaultClass{
	twv1.ClassRunaway, twv1.ClassStalled, twv1.ClassDegenerate, twv1.ClassOverspend,
	twv1.ClassLength, twv1.ClassNoSignal, twv1.ClassInfra, twv1.ClassAgentError,
}

func init() {
	for _, d := range tripDetectors {
		for _, mode := range []string{ModeEnforce, ModeAudit} {
			TripsTotal.WithLabelValues(d, string(ClassOf(d)), "", mode)
		}
	}
	for _, c := range faultClasses {
		RerollsTotal.WithLabelValues(string(c))
		FaultsTotal.WithLabelValues(string(c), "")
		TurnsTotal.WithLabelValues(string(twv1.TurnFailed), string(c), "", "false")
	}
	for _, w := range protocol.Warnings {
		WarningsTotal.WithLabelValues(w.Reason, "")
	}
	TurnsTotal.WithLabelValues(string(twv1.TurnSucceeded), "", "", "false")
	TurnsTotal.WithLabelValues(string(twv1.TurnAborted), "", "", "false")
	// An aborted turn counts in turns_total only (docs/metrics.md): its
	// duration is the caller's choice, not the agent's, and is not observed.
	for _, o := range []twv1.TurnOutcome{twv1.TurnSucceeded, twv1.TurnFailed} {
		turnDuration.WithLabelValues(string(o))
	}
}
