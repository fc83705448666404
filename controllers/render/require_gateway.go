package render

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/agents"
)

// Where a policy requires the model gateway (spec.model.requireGateway,
// docs/gateway.md), the key is the gateway's alone. The admission policies
// turnwatch-agentrun-gateway and turnwatch-agentrun-cluster-gateway refuse
// at apply a template that sets a key itself; this check is the
// controller's own, for a run admitted before the policy or where the
// admission policies are not installed, and it also refuses a run that ends
// up without a gateway (which admission cannot see: another policy may
// give the default).

// TemplateKeyEnvs lists, one entry per container with its field path, the
// model key env vars (agents.KeyEnvs) a template sets itself, as a value
// or a valueFrom: the same entries, in the same words, as the admission
// policies' refusal.
func TemplateKeyEnvs(spec *corev1.PodSpec) []string {
	keys := agents.KeyEnvs()
	var out []string
	for _, list := range []struct {
		field string
		cs    []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for _, c := range list.cs {
			var set []string
			for _, e := range c.Env {
				if slices.Contains(keys, e.Name) {
					set = append(set, e.Name)
				}
			}
			if len(set) > 0 {
				out = append(out, fmt.Sprintf("spec.template.spec.%s[%s].env: %s", list.field, c.Name, strings.Join(set, ", ")))
			}
		}
	}
	return out
}

// requireGateway refuses a run that a policy requires the gateway of and
// that sets a model key itself or has no gateway; nil when none requires
// it, or the run meets it.
func requireGateway(run *twv1.AgentRun, policies []turnpolicy.AppliedPolicy) error {
	required := turnpolicy.GatewayRequired(policies)
	if required == "" {
		return nil
	}
	problems := TemplateKeyEnvs(&run.Spec.Template.Spec)
	if gw, _ := turnpolicy.Gateway(run, policies); gw == nil && run.Spec.Drill == nil {
		problems = append(problems, "spec.model.gateway: unset, and no policy gives a default (a TurnPolicy's or ClusterTurnPolicy's spec.model.gateway)")
	}
	if len(problems) == 0 {
		return nil
	}
	return &TemplateRefusedError{why: "does not meet " + required + "'s spec.model.requireGateway (the key is the gateway's alone, docs/gateway.md)", hazards: problems}
}
