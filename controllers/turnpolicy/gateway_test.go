package turnpolicy

import (
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func gatewayPolicy(source, upstream string, require bool) AppliedPolicy {
	m := &twv1.ModelPolicy{RequireGateway: require}
	if upstream != "" {
		m.Gateway = &twv1.ModelGateway{Upstream: upstream, KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}
	}
	return AppliedPolicy{Source: source, Spec: &twv1.TurnPolicySpec{Model: m}}
}

// The run's own gateway wins; else the default of the policy of highest
// precedence (the last in the list); a drill has none.
func TestGateway(t *testing.T) {
	cluster := gatewayPolicy("ClusterTurnPolicy/all", "https://cluster.example", true)
	local := gatewayPolicy("TurnPolicy/team", "https://team.example", false)
	bare := gatewayPolicy("TurnPolicy/bare", "", false)
	own := &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://own.example"}}
	for _, c := range []struct {
		name             string
		model            *twv1.Model
		drill            bool
		policies         []AppliedPolicy
		upstream, source string
	}{
		{"none", nil, false, nil, "", ""},
		{"the run's", own, false, []AppliedPolicy{cluster, local}, "https://own.example", SourceRun},
		{"the namespace's over the cluster's", nil, false, []AppliedPolicy{cluster, local}, "https://team.example", "TurnPolicy/team"},
		{"a policy without one leaves the other's", nil, false, []AppliedPolicy{cluster, bare}, "https://cluster.example", "ClusterTurnPolicy/all"},
		{"a drill has none", nil, true, []AppliedPolicy{cluster}, "", ""},
	} {
		run := &twv1.AgentRun{}
		run.Spec.Model = c.model
		if c.drill {
			run.Spec.Drill = &twv1.Drill{Scenario: "healthy"}
		}
		gw, source := Gateway(run, c.policies)
		upstream := ""
		if gw != nil {
			upstream = gw.Upstream
		}
		if upstream != c.upstream || source != c.source {
			t.Errorf("%s: %q from %q, want %q from %q", c.name, upstream, source, c.upstream, c.source)
		}
	}
	if got := GatewayRequired([]AppliedPolicy{cluster, local}); got != "ClusterTurnPolicy/all" {
		t.Errorf("required by %q", got)
	}
	if got := GatewayRequired([]AppliedPolicy{local, bare}); got != "" {
		t.Errorf("required by %q, want none", got)
	}
}
