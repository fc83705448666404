package controllers

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// drillEvents marks every Event about a drill run as a drill: its note
// starts with "drill SCENARIO: ", so that `kubectl describe` and `kubectl
// get events` never show a drill's fault as a real one (docs/drill.md).
type drillEvents struct{ events.EventRecorder }

func (d drillEvents) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if run, ok := regarding.(*twv1.AgentRun); ok && run.Spec.Drill != nil {
		note = "drill " + run.Spec.Drill.Scenario + ": " + note
	}
	d.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
