package controllers

import (
	"fmt"
	"slices"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// rerollCheck is one link of the reroll chain: it returns why the run's last
// (failed) turn may not be rerolled, or "" when this check has no objection.
type rerollCheck func(run *twv1.AgentRun, last *twv1.AgentTurn, pol twv1.RerollPolicy) string

// rerollChain is checked in order; the first objection is the one reported.
var rerollChain = []rerollCheck{
	notContinued,
	notOverspend,
	classRerolled,
	rerollLeft,
}

// notContinued: a continue run is never rerolled (a reroll is a fresh
// conversation, which is not what a continue asked for), even when its first
// turn found nothing to resume and started fresh.
func notContinued(run *twv1.AgentRun, last *twv1.AgentTurn, _ twv1.RerollPolicy) string {
	if run.Spec.Continue || last.Spec.Continue {
		return "a continued conversation is not rerolled"
	}
	return ""
}

// notOverspend: the spend cap covers the whole run, so another turn would
// start above it.
func notOverspend(_ *twv1.AgentRun, last *twv1.AgentTurn, _ twv1.RerollPolicy) string {
	if errorType(last) == twv1.ClassOverspend && last.Status.Error.Detector == twv1.DetectorBudget {
		return "overspend is not rerolled: the budget stays exhausted until its window rolls over"
	}
	if errorType(last) == twv1.ClassOverspend {
		return "overspend is not rerolled: maxCostUSD caps the whole run"
	}
	return ""
}

func classRerolled(_ *twv1.AgentRun, last *twv1.AgentTurn, pol twv1.RerollPolicy) string {
	if !slices.Contains(pol.Classes, errorType(last)) {
		return fmt.Sprintf("class %s is not rerolled by policy", errorType(last))
	}
	return ""
}

func rerollLeft(_ *twv1.AgentRun, last *twv1.AgentTurn, pol twv1.RerollPolicy) string {
	limit := int32(0)
	if pol.Max != nil {
		limit = *pol.Max
	}
	if last.Spec.Attempt >= limit {
		return fmt.Sprintf("no reroll left (%d of %d used)", last.Spec.Attempt, limit)
	}
	return ""
}

// canReroll runs the chain. ok is true when the failed turn gets a reroll;
// otherwise why says which rule refused it.
func canReroll(run *twv1.AgentRun, last *twv1.AgentTurn, pol twv1.RerollPolicy) (ok bool, why string) {
	for _, check := range rerollChain {
		if why := check(run, last, pol); why != "" {
			return false, why
		}
	}
	return true, ""
}

// runPolicy is the reroll policy of a run: the cluster default with the run's
// overrides.
func runPolicy(def twv1.RerollPolicy, run *twv1.AgentRun) twv1.RerollPolicy {
	return mergeRerolls(def, run.Spec.Rerolls)
}

func errorType(t *twv1.AgentTurn) twv1.FaultClass {
	if t.Status.Error == nil {
		return ""
	}
	return t.Status.Error.Type
}

// step is what the run does next.
type step string

const (
	stepCreate  step = "Create"  // create the turn of decision.attempt
	stepWait    step = "Wait"    // the latest turn runs
	stepSucceed step = "Succeed" // the latest turn succeeded
	stepFault   step = "Fault"   // the latest turn failed and gets no reroll
	stepAbort   step = "Abort"   // the run was cancelled or deleted
	stepQueue   step = "Queue"   // the first turn waits for another run of the session
)

// decision is the outcome of decide.
type decision struct {
	step    step
	attempt int32           // for stepCreate
	last    *twv1.AgentTurn // the latest turn, if any
	why     string          // for stepFault: why no reroll
	waitFor string          // for stepQueue: the run of the session that goes first
}

// decide says what the run does next from its turns, oldest first. It is
// pure: the same run and turns give the same decision, which is what makes a
// restarted controller create the same (deterministically named) turn.
func decide(run *twv1.AgentRun, turns []twv1.AgentTurn, pol twv1.RerollPolicy) decision {
	stopping := run.Spec.Cancel || run.DeletionTimestamp != nil
	if len(turns) == 0 {
		if stopping {
			return decision{step: stepAbort}
		}
		return decision{step: stepCreate, attempt: 0}
	}
	last := &turns[len(turns)-1]
	d := decision{last: last}
	switch last.Status.Outcome {
	case "":
		d.step = stepWait
	case twv1.TurnSucceeded:
		d.step = stepSucceed
	case twv1.TurnAborted:
		d.step = stepAbort
	default:
		ok, why := canReroll(run, last, pol)
		switch {
		case !ok:
			d.step, d.why = stepFault, why
		case stopping:
			d.step = stepAbort
		default:
			d.step, d.attempt = stepCreate, last.Spec.Attempt+1
		}
	}
	return d
}
