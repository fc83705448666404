package agentrun

import (
	"fmt"
	"slices"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
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
	if ErrorType(last) == twv1.ClassOverspend && last.Status.Error.Detector == twv1.DetectorBudget {
		return "overspend is not rerolled: the budget stays exhausted until its window rolls over"
	}
	if ErrorType(last) == twv1.ClassOverspend {
		return "overspend is not rerolled: maxCostUSD caps the whole run"
	}
	return ""
}

func classRerolled(_ *twv1.AgentRun, last *twv1.AgentTurn, pol twv1.RerollPolicy) string {
	if !slices.Contains(pol.Classes, ErrorType(last)) {
		return fmt.Sprintf("class %s is not rerolled by policy", ErrorType(last))
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
	return shared.MergeRerolls(def, run.Spec.Rerolls)
}

func ErrorType(t *twv1.AgentTurn) twv1.FaultClass {
	if t.Status.Error == nil {
		return ""
	}
	return t.Status.Error.Type
}

// Step is what the run does next.
type step string

const (
	StepCreate  step = "Create"  // create the turn of decision.attempt
	stepWait    step = "Wait"    // the latest turn runs
	stepSucceed step = "Succeed" // the latest turn succeeded
	stepFault   step = "Fault"   // the latest turn failed and gets no reroll
	stepAbort   step = "Abort"   // the run was cancelled or deleted
	stepQueue   step = "Queue"   // the first turn waits for another run of the session
)

// Decision is the outcome of decide.
type Decision struct {
	Step    step
	attempt int32           // for stepCreate
	last    *twv1.AgentTurn // the latest turn, if any
	Why     string          // for stepFault: why no reroll
	waitFor string          // for stepQueue: the run of the session that goes first
}

// decide says what the run does next from its turns, oldest first. It is
// pure: the same run and turns give the same decision, which is what makes a
// restarted controller create the same (deterministically named) turn.
func decide(run *twv1.AgentRun, turns []twv1.AgentTurn, pol twv1.RerollPolicy) Decision {
	stopping := run.Spec.Cancel || run.DeletionTimestamp != nil
	if len(turns) == 0 {
		if stopping {
			return Decision{Step: stepAbort}
		}
		return Decision{Step: StepCreate, attempt: 0}
	}
	last := &turns[len(turns)-1]
	d := Decision{last: last}
	switch last.Status.Outcome {
	case "":
		d.Step = stepWait
	case twv1.TurnSucceeded:
		d.Step = stepSucceed
	case twv1.TurnAborted:
		d.Step = stepAbort
	default:
		ok, why := canReroll(run, last, pol)
		switch {
		case !ok:
			d.Step, d.Why = stepFault, why
		case stopping:
			d.Step = stepAbort
		default:
			d.Step, d.attempt = StepCreate, last.Spec.Attempt+1
		}
	}
	return d
}
