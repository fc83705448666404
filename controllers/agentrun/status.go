package agentrun

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// AgentRun condition types.
const (
	// ConditionReady is True once the run succeeded; False, with the reason
	// below, while it runs or once it faulted or was aborted.
	ConditionReady = "Ready"
	// ConditionFaulted is True once the run faulted; its reason is the fault
	// class, its message the detector's text and the turn.
	ConditionFaulted = "Faulted"
)

// Reasons of the AgentRun's conditions (and of the Reason printer column).
const (
	reasonPending   = "Pending"   // no turn yet
	reasonRunning   = "Running"   // the first turn runs
	reasonRerolled  = "Rerolled"  // a reroll runs
	reasonSucceeded = "Succeeded" // a turn finished with a final result
	reasonAborted   = "Aborted"   // cancelled or deleted
	// A faulted run's reason is its class in CamelCase: Runaway, Stalled,
	// Degenerate, Overspend, Length, NoSignal, Infra, AgentError.
)

// classReason is a fault class as a condition reason.
func classReason(c twv1.FaultClass) string {
	switch c {
	case twv1.ClassRunaway:
		return "Runaway"
	case twv1.ClassStalled:
		return "Stalled"
	case twv1.ClassDegenerate:
		return "Degenerate"
	case twv1.ClassOverspend:
		return "Overspend"
	case twv1.ClassLength:
		return "Length"
	case twv1.ClassNoSignal:
		return "NoSignal"
	case twv1.ClassInfra:
		return "Infra"
	case twv1.ClassAgentError:
		return "AgentError"
	}
	return "Faulted"
}

// runStatus computes the run's status from its turns (oldest first) and the
// Decision taken on them. It is pure: the reconciler writes its result once.
func runStatus(run *twv1.AgentRun, turns []twv1.AgentTurn, d Decision, now metav1.Time) twv1.AgentRunStatus {
	st := run.Status.DeepCopy()
	st.ObservedGeneration = run.Generation
	setTurns(st, turns)
	setTotals(st)
	setPhase(st, turns, d, now)
	setEpoch(st, run, turns)
	setConditions(st, d)
	setWaiting(st, run, d)
	setBudgetHold(st, d)
	if run.Spec.Drill != nil {
		st.Drill = drillStatus(run, turns, st.Phase, st.Fault, false)
	}
	return *st
}

// setTurns lists the turns (the gone ones come as placeholders, see
// withGone) with their own steps and cost, and keeps attempts a high-water
// mark: it never goes down, whatever is deleted.
func setTurns(st *twv1.AgentRunStatus, turns []twv1.AgentTurn) {
	st.Turns = nil
	for i := range turns {
		t := &turns[i]
		st.Turns = append(st.Turns, twv1.TurnRef{
			Name: t.Name, Attempt: t.Spec.Attempt, Outcome: t.Status.Outcome, ErrorType: ErrorType(t),
			Steps: t.Status.Steps, CostUSD: t.Status.CostUSD, StreamCostUSD: t.Status.StreamCostUSD,
		})
		st.Attempts = max(st.Attempts, t.Spec.Attempt+1)
		st.AnnouncedAttempt = max(st.AnnouncedAttempt, t.Spec.Attempt)
	}
	st.Attempts = max(st.Attempts, int32(len(turns)))
	if len(turns) > 0 {
		st.ConversationID = turns[len(turns)-1].Spec.ConversationID
	}
}

// setTotals sums the turns' own steps and costs: a turn's cost is that
// turn's alone, so the run's is the plain sum. A running turn counts with
// its sidecar's latest report (liveCounts), which is what that sidecar
// Wrote into steps and costUSD itself: the sum then equals it, and the
// report costs the controller no write.
func setTotals(st *twv1.AgentRunStatus) {
	var total protocol.Progress
	for _, t := range st.Turns {
		total = total.Add(shared.LiveCounts(t, st.Progress))
	}
	st.Steps, st.CostUSD = total.Steps, total.CostUSD()
}

func setPhase(st *twv1.AgentRunStatus, turns []twv1.AgentTurn, d Decision, now metav1.Time) {
	if st.StartTime == nil && len(turns) > 0 {
		st.StartTime = shared.PtrTime(turns[0].CreationTimestamp)
	}
	st.Fault = nil
	switch {
	case d.Step == stepSucceed:
		st.Phase = twv1.RunSucceeded
	case d.Step == stepFault:
		st.Phase = twv1.RunFaulted
		st.Fault = faultOf(d.last)
	case d.Step == stepAbort:
		st.Phase = twv1.RunAborted
	case len(turns) == 0:
		st.Phase = twv1.RunPending
	default:
		st.Phase = twv1.RunRunning
	}
	if shared.Finished(st.Phase) {
		if st.CompletionTime == nil {
			st.CompletionTime = &now
		}
	} else {
		st.CompletionTime = nil
	}
}

func faultOf(t *twv1.AgentTurn) *twv1.Fault {
	f := &twv1.Fault{Class: ErrorType(t), Turn: t.Name}
	if e := t.Status.Error; e != nil {
		f.Detector, f.Message = e.Detector, e.Message
	}
	return f
}

// setEpoch: the run's epoch is its latest conversation's; a faulted session
// run bumps it by one so that the session's next continue starts fresh
// rather than resuming a conversation that ran away.
func setEpoch(st *twv1.AgentRunStatus, run *twv1.AgentRun, turns []twv1.AgentTurn) {
	if len(turns) == 0 {
		return
	}
	st.Epoch = turns[len(turns)-1].Spec.Epoch
	if st.Phase == twv1.RunFaulted && run.Spec.Session != "" {
		st.Epoch++
	}
}

func setConditions(st *twv1.AgentRunStatus, d Decision) {
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: st.ObservedGeneration}
	switch st.Phase {
	case twv1.RunPending:
		ready.Reason, ready.Message = reasonPending, "no turn yet"
	case twv1.RunRunning:
		last := st.Turns[len(st.Turns)-1]
		ready.Reason, ready.Message = reasonRunning, fmt.Sprintf("turn %s runs", last.Name)
		if last.Attempt > 0 {
			ready.Reason = reasonRerolled
			ready.Message = fmt.Sprintf("turn %s runs (reroll %d)", last.Name, last.Attempt)
		}
	case twv1.RunSucceeded:
		ready.Status, ready.Reason = metav1.ConditionTrue, reasonSucceeded
		ready.Message = fmt.Sprintf("turn %s finished with a final result", d.last.Name)
	case twv1.RunAborted:
		ready.Reason, ready.Message = reasonAborted, "the run was cancelled or deleted"
	case twv1.RunFaulted:
		ready.Reason, ready.Message = classReason(st.Fault.Class), faultMessage(st.Fault, d.Why)
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	if st.Phase == twv1.RunFaulted {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionFaulted, Status: metav1.ConditionTrue, ObservedGeneration: st.ObservedGeneration,
			Reason: classReason(st.Fault.Class), Message: faultMessage(st.Fault, d.Why),
		})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionFaulted)
	}
}

// faultMessage is the one line `kubectl describe` shows for a fault: class,
// detector, text, turn, and why there was no reroll.
func faultMessage(f *twv1.Fault, why string) string {
	s := fmt.Sprintf("turn %s failed: %s", f.Turn, f.Class)
	if f.Detector != "" {
		s += " (" + f.Detector + ")"
	}
	if f.Message != "" {
		s += ": " + f.Message
	}
	if why != "" {
		s += "; " + why
	}
	return s
}
