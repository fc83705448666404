package render

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/internal/fixture"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// Each container that sets a model key, as a value or a valueFrom, is
// named with its keys; other env is not.
func TestTemplateKeyEnvs(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{{Name: "GEMINI_API_KEY", Value: "x"}}}},
		Containers: []corev1.Container{
			{Name: "agent", Env: []corev1.EnvVar{{Name: "HOME", Value: "/h"}, {Name: "OPENAI_API_KEY", ValueFrom: &corev1.EnvVarSource{}}, {Name: "CODEX_API_KEY", Value: "y"}}},
			{Name: "tools", Env: []corev1.EnvVar{{Name: "GITHUB_TOKEN", Value: "z"}}},
		},
	}
	want := []string{
		"spec.template.spec.initContainers[setup].env: GEMINI_API_KEY",
		"spec.template.spec.containers[agent].env: OPENAI_API_KEY, CODEX_API_KEY",
	}
	if got := TemplateKeyEnvs(spec); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Where a policy requires the gateway, a template that sets a key and a run
// that ends up without a gateway render no Pod, naming the policy and the
// field; a policy's default gateway meets it, and so does a drill.
func TestRequireGatewayAtRender(t *testing.T) {
	requiring := turnpolicy.AppliedPolicy{Source: "ClusterTurnPolicy/metered", Spec: &twv1.TurnPolicySpec{Model: &twv1.ModelPolicy{RequireGateway: true}}}
	defaulting := turnpolicy.AppliedPolicy{Source: "TurnPolicy/team", Spec: &twv1.TurnPolicySpec{Model: &twv1.ModelPolicy{Gateway: gatewayOf("k").Gateway}}}
	keyed := func(r *twv1.AgentRun) {
		r.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ANTHROPIC_API_KEY", Value: "sk"}}
	}
	for _, c := range []struct {
		name     string
		run      *twv1.AgentRun
		policies []turnpolicy.AppliedPolicy
		want     []string // nil: rendered
	}{
		{"not required", fixture.Run("ns", "r", keyed), nil, nil},
		{"no gateway", fixture.Run("ns", "r"), []turnpolicy.AppliedPolicy{requiring},
			[]string{"ClusterTurnPolicy/metered's spec.model.requireGateway", "spec.model.gateway: unset"}},
		{"a key of its own", fixture.Run("ns", "r", keyed, func(r *twv1.AgentRun) { r.Spec.Model = gatewayOf("k") }), []turnpolicy.AppliedPolicy{requiring},
			[]string{"ClusterTurnPolicy/metered", "spec.template.spec.containers[agent].env: ANTHROPIC_API_KEY"}},
		{"the policy's default", fixture.Run("ns", "r"), []turnpolicy.AppliedPolicy{requiring, defaulting}, nil},
		{"a drill", fixture.Run("ns", "r", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "healthy"} }), []turnpolicy.AppliedPolicy{requiring}, nil},
	} {
		turn := &twv1.AgentTurn{}
		turn.Name, turn.Namespace = "r-0", "ns"
		o := modelOptions()
		o.Guards, o.Policies = shared.DefaultConfig().Guards, c.policies
		_, err := RenderPod(c.run, turn, o)
		var refused *TemplateRefusedError
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != nil && !errors.As(err, &refused):
			t.Errorf("%s: %v, want a refusal", c.name, err)
		case c.want != nil:
			if e := fixture.ContainsAll(err.Error(), c.want...); e != nil {
				t.Errorf("%s: %v", c.name, e)
			}
		}
	}
}
