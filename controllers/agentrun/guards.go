package agentrun

import (
	"context"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// setTurnGuards writes the turn's effective guards and audited detectors on
// its spec, from the policies that apply to the run's namespace.
func (r *AgentRunReconciler) setTurnGuards(ctx context.Context, run *twv1.AgentRun, spec *twv1.AgentTurnSpec) error {
	policies, err := turnpolicy.PoliciesFor(ctx, r.Client, run.Namespace)
	if err != nil {
		return err
	}
	in := turnpolicy.GuardInputs{Defaults: r.Config.Guards, Policies: policies, Run: run.Spec.Guards, Drill: run.Spec.Drill != nil}
	if sc, drill, err := turnpolicy.DrillScenario(run); drill && err == nil {
		// An unknown scenario fails the turn when its Pod is rendered.
		if in.DrillGuards, err = turnpolicy.DrillGuards(sc); err != nil {
			return err
		}
	}
	spec.Guards, spec.Audit = turnpolicy.ResolveGuards(in)
	return nil
}
