package controllers

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"

	"turnwatch.dev/turnwatch/controllers/render"
)

// podSecurityPolicies are the admission policies of restricted, by param kind.
var podSecurityPolicies = map[string]string{
	"TurnPolicy":        "turnwatch-agentrun-pod-security",
	"ClusterTurnPolicy": "turnwatch-agentrun-cluster-pod-security",
}

// variable is a policy's variable by name.
func variable(t *testing.T, p admv1.ValidatingAdmissionPolicy, name string) string {
	t.Helper()
	for _, v := range p.Spec.Variables {
		if v.Name == name {
			return v.Expression
		}
	}
	t.Fatalf("%s has no variable %s", p.Name, name)
	return ""
}

// listBlock is the part of a CEL expression that reads one container list,
// from "variables.spec.?LIST" to the next "variables.spec.?" or the end.
func listBlock(t *testing.T, expr, list string) string {
	t.Helper()
	start := strings.Index(expr, "variables.spec.?"+list+".")
	if start < 0 {
		t.Fatalf("no block for %s in %s", list, expr)
	}
	rest := expr[start+1:]
	if end := strings.Index(rest, "variables.spec.?"); end >= 0 {
		return expr[start : start+1+end]
	}
	return expr[start:]
}

// celStrings reads a CEL list of string literals.
func celStrings(t *testing.T, expr string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// The admission policies say what controllers/render/pod_security.go says: the
// lists of admitted values are the same; each container list is read by
// the same expression (CEL has no functions: the init and app containers'
// are two copies); and the restricted policy for ClusterTurnPolicies holds
// the validations and variables of the one for TurnPolicies but the
// policy's name and selection.
func TestPodSecurityPolicyValidations(t *testing.T) {
	pols := admissionPolicies(t)
	tmpl := pols["turnwatch-agentrun-template"]
	for name, want := range map[string][]string{
		"baselineCapabilities": strs(render.BaselineCapabilities),
		"safeSysctls":          render.SafeSysctls,
		"seLinuxTypes":         render.SeLinuxTypes,
	} {
		if got := celStrings(t, variable(t, tmpl, name)); !slices.Equal(got, want) {
			t.Errorf("turnwatch-agentrun-template variable %s: %q, controllers/render/pod_security.go says %q", name, got, want)
		}
	}
	copies := func(p admv1.ValidatingAdmissionPolicy, v string) {
		expr := variable(t, p, v)
		init, app := listBlock(t, expr, "initContainers"), listBlock(t, expr, "containers")
		norm := func(s string) string { return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "+")) }
		if norm(strings.ReplaceAll(init, "initContainers", "containers")) != norm(app) {
			t.Errorf("%s variable %s: the initContainers and containers blocks differ:\n%s\n---\n%s", p.Name, v, init, app)
		}
	}
	copies(tmpl, "baseline")
	local, cluster := pols[podSecurityPolicies["TurnPolicy"]], pols[podSecurityPolicies["ClusterTurnPolicy"]]
	for kind, name := range podSecurityPolicies {
		p, ok := pols[name]
		if !ok {
			t.Fatalf("config/sidecar has no admission policy %s", name)
		}
		if p.Spec.ParamKind == nil || p.Spec.ParamKind.Kind != kind {
			t.Errorf("%s: paramKind %+v, want %s", name, p.Spec.ParamKind, kind)
		}
		copies(p, "restricted")
	}
	selection := []string{"policy", "selected", "labels", "matchLabels", "matchExpressions"}
	vars := func(p admv1.ValidatingAdmissionPolicy) []string {
		var out []string
		for _, v := range p.Spec.Variables {
			if !slices.Contains(selection, v.Name) {
				out = append(out, v.Name+": "+v.Expression)
			}
		}
		return out
	}
	if !slices.Equal(vars(local), vars(cluster)) || !reflect.DeepEqual(local.Spec.Validations, cluster.Spec.Validations) ||
		!reflect.DeepEqual(local.Spec.MatchConditions, cluster.Spec.MatchConditions) {
		t.Errorf("%s and %s differ beyond the policy's selection", local.Name, cluster.Name)
	}
	// The variables both policies share with turnwatch-agentrun-template.
	for _, v := range []string{"spec", "podSecurityContext", "userNamespace"} {
		if variable(t, tmpl, v) != variable(t, local, v) {
			t.Errorf("variable %s differs between %s and %s", v, tmpl.Name, local.Name)
		}
	}
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
