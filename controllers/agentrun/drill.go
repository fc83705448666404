package agentrun

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// A drill run's status.drill (docs/drill.md#results): what its scenario
// expected of the run's CLI, and what the run's turns say happened. The
// result waits drillSettle after the run ended: the sidecar of the last
// turn reports the refused call within its drain, after the trip that
// ended the run; or less, once every turn's Pod is over.
const DrillSettle = protocol.SidecarDrain + protocol.SidecarWriteGrace + 5*time.Second

// drillStatus computes status.drill from the run's turns (oldest first);
// result is Pending unless final. It is pure.
func drillStatus(run *twv1.AgentRun, turns []twv1.AgentTurn, phase twv1.RunPhase, fault *twv1.Fault, final bool) *twv1.DrillStatus {
	sc, err := scriptedmodel.Lookup(run.Spec.Drill.Scenario)
	if err != nil {
		return &twv1.DrillStatus{Scenario: run.Spec.Drill.Scenario, Result: twv1.DrillPending, Note: err.Error()}
	}
	detector, class, ex := sc.Verdict(string(run.Spec.Format), true)
	d := &twv1.DrillStatus{Scenario: sc.Name, Guards: sc.Guards,
		Expected: twv1.DrillVerdict{Class: twv1.FaultClass(class), Detector: detector}, Result: twv1.DrillPending}
	switch {
	case ex.Blind != "":
		d.Note = "the CLI's stream is blind to it: " + ex.Blind
	case ex.Own != "":
		d.Note = "the CLI's own guard ends it first (" + ex.Own + "): its final result reports a failure"
	}
	switch {
	case fault != nil:
		d.Got = twv1.DrillVerdict{Class: fault.Class, Detector: fault.Detector}
	case detector != "" && class == "" && nudged(turns):
		d.Got = twv1.DrillVerdict{Detector: detector} // a nudge: it caught the turn, which went on
	}
	setDrillTurns(d, turns)
	if final {
		d.Result = drillResult(d, phase, turns)
	}
	return d
}

// setDrillTurns reads the turns' reports: where the first trip was, whether
// the nudges reached the agent, whether the tripping call was refused, and
// whether the reroll started fresh (known once it asked the model).
func setDrillTurns(d *twv1.DrillStatus, turns []twv1.AgentTurn) {
	tripped := false
	for i := range turns {
		st := &turns[i].Status
		if st.Error != nil && st.Error.Detector != "" && !tripped {
			tripped, d.AtCall = true, st.Steps
			if trippedAtCall(st.Error.Detector) {
				d.CallRefused = boolPtr(st.RefusedCall != "")
			}
		}
		switch st.NudgeDelivery {
		case twv1.NudgeNotDelivered:
			d.NudgeDelivered = boolPtr(false)
		case twv1.NudgeDelivered:
			if d.NudgeDelivered == nil {
				d.NudgeDelivered = boolPtr(true)
			}
		}
		// A reroll that never asked the model (its CLI stopped or stalled
		// before its first request) says nothing of freshness.
		if i > 0 && !turns[i].Spec.Continue && st.Drill != nil && st.Drill.Requests > 0 {
			if d.RerollFresh == nil || !st.Drill.Fresh {
				d.RerollFresh = boolPtr(st.Drill.Fresh)
			}
		}
	}
}

// trippedAtCall says whether the detector trips at a tool call, which the
// agent's hook can refuse.
func trippedAtCall(detector string) bool {
	ds := monitor.Detectors()
	i := slices.IndexFunc(ds, func(d monitor.Detector) bool { return d.Name == detector })
	return i >= 0 && ds[i].AtCall()
}

// drillResult judges a finished drill against what it expected.
func drillResult(d *twv1.DrillStatus, phase twv1.RunPhase, turns []twv1.AgentTurn) twv1.DrillResult {
	want := d.Expected
	switch {
	case want.Class == "" && want.Detector != "": // a nudge: the run goes on
		if phase == twv1.RunSucceeded && nudged(turns) {
			return twv1.DrillCaught
		}
		if phase == twv1.RunFaulted {
			return twv1.DrillFalseAlarm
		}
		return twv1.DrillMissed
	case want.Class == "":
		if phase == twv1.RunSucceeded {
			return twv1.DrillAsExpected
		}
		if phase == twv1.RunFaulted {
			return twv1.DrillFalseAlarm
		}
		return twv1.DrillMissed
	case phase != twv1.RunFaulted:
		return twv1.DrillMissed
	case d.Got.Class == want.Class && (want.Detector == "" || d.Got.Detector == want.Detector):
		return twv1.DrillCaught
	}
	return twv1.DrillCaughtOtherwise
}

func nudged(turns []twv1.AgentTurn) bool {
	return slices.ContainsFunc(turns, func(t twv1.AgentTurn) bool { return t.Status.Nudges > 0 })
}

func boolPtr(b bool) *bool { return &b }

// holdDrill is holdFinished's part for a drill run: until the result is
// in, status.drill follows the turns' late reports; once every turn's Pod
// is over, or drillSettle after the run ended, the result is written, once,
// and told as an Event.
// It returns when to look again (0: the result is in).
func (r *AgentRunReconciler) holdDrill(ctx context.Context, run *twv1.AgentRun, st *twv1.AgentRunStatus) (time.Duration, error) {
	if run.Spec.Drill == nil || (st.Drill != nil && st.Drill.Result != twv1.DrillPending && st.Drill.Result != "") {
		return 0, nil
	}
	turns, err := r.turnsOf(ctx, run)
	if err != nil {
		return 0, err
	}
	if turns, err = r.withGone(ctx, run, turns); err != nil {
		return 0, err
	}
	wait := time.Duration(0)
	if st.CompletionTime != nil && !r.sidecarsDone(ctx, run, turns) {
		wait = st.CompletionTime.Add(DrillSettle).Sub(r.Clock.Now())
	}
	st.Drill = drillStatus(run, turns, st.Phase, st.Fault, wait <= 0)
	return max(wait, 0), nil
}

// sidecarsDone says whether every turn's Pod is over or gone: no sidecar
// has a report left to write, and the result need not wait drillSettle.
func (r *AgentRunReconciler) sidecarsDone(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn) bool {
	for i := range turns {
		pod := &corev1.Pod{}
		err := r.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: turns[i].Name}, pod)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil || !shared.PodTerminal(pod):
			return false
		}
	}
	return true
}

// drillDecided says whether a status write moved a drill's result from
// pending to its end.
func drillDecided(before, after *twv1.DrillStatus) bool {
	pending := func(d *twv1.DrillStatus) bool { return d == nil || d.Result == "" || d.Result == twv1.DrillPending }
	return pending(before) && !pending(after)
}

// recordDrill tells a drill's result: a Normal Event when it holds, a
// Warning when it failed.
func (r *AgentRunReconciler) recordDrill(run *twv1.AgentRun) {
	d := run.Status.Drill
	typ := corev1.EventTypeNormal
	if d.Result.Failed() {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(run, nil, typ, EventDrill+string(d.Result), "Drill", "%s (expected %s, got %s)",
		d.Result, d.Expected.String(), d.Got.String())
}

// drillPodEnded passes a drill Pod's end: its phase turned Succeeded or
// Failed (its sidecar wrote its last report), or it was deleted.
var drillPodEnded = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Pod)
		pod, ok := e.ObjectNew.(*corev1.Pod)
		return okOld && ok && pod.Labels[twv1.LabelDrill] != "" && !shared.PodTerminal(old) && shared.PodTerminal(pod)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(e event.DeleteEvent) bool { return e.Object.GetLabels()[twv1.LabelDrill] != "" },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// drillRunOfPod is the run of a drill turn's Pod.
func drillRunOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	run := obj.GetLabels()[twv1.LabelRun]
	if run == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: run}}}
}
