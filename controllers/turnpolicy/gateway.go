package turnpolicy

import twv1 "turnwatch.dev/turnwatch/api/v1alpha1"

// A run's model gateway (docs/gateway.md) is resolved when its turn's Pod
// is rendered, from the policies in force then, with the precedence of the
// guards' defaults (docs/policies.md#precedence): the run's own, else the
// default of the policy of highest precedence that gives one.

// Gateway is the run's model gateway and what set it ("AgentRun",
// "TurnPolicy/NAME", "ClusterTurnPolicy/NAME"); nil for a drill (its model
// is the scripted one) and for a run that neither it nor any policy gives
// one. policies are lowest precedence first (PoliciesFor).
func Gateway(run *twv1.AgentRun, policies []AppliedPolicy) (*twv1.ModelGateway, string) {
	if run.Spec.Drill != nil {
		return nil, ""
	}
	if m := run.Spec.Model; m != nil && m.Gateway != nil {
		return m.Gateway, SourceRun
	}
	var gw *twv1.ModelGateway
	source := ""
	for _, p := range policies {
		if m := p.Spec.Model; m != nil && m.Gateway != nil {
			gw, source = m.Gateway, p.Source
		}
	}
	return gw, source
}

// GatewayRequired names the policy of highest precedence that requires the
// model gateway (spec.model.requireGateway); "" when none does.
func GatewayRequired(policies []AppliedPolicy) string {
	source := ""
	for _, p := range policies {
		if m := p.Spec.Model; m != nil && m.RequireGateway {
			source = p.Source
		}
	}
	return source
}
