package controllers

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// limitsPolicies are the admission policies of limits, by param kind.
var limitsPolicies = map[string]string{
	"TurnPolicy":        "turnwatch-agentrun-limits",
	"ClusterTurnPolicy": "turnwatch-agentrun-cluster-limits",
}

// admissionPolicies reads config/sidecar's admission policies by name.
func admissionPolicies(t *testing.T) map[string]admv1.ValidatingAdmissionPolicy {
	t.Helper()
	var b []byte
	for _, f := range []string{"validatingadmissionpolicy.yaml", "validatingadmissionpolicy_limits.yaml"} {
		c, err := os.ReadFile(filepath.Join("..", "config", "sidecar", f))
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, c...), "\n---\n"...)
	}
	out := map[string]admv1.ValidatingAdmissionPolicy{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var p admv1.ValidatingAdmissionPolicy
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Kind == "ValidatingAdmissionPolicy" {
			out[p.Name] = p
		}
	}
}

// The limits policies hold one validation per field of GuardLimits, each
// comparing the field as its guard's kind says, and the policy for
// ClusterTurnPolicies holds the same validations as the one for
// TurnPolicies.
func TestLimitsPolicyValidations(t *testing.T) {
	kinds := map[string]monitor.GuardKind{}
	for _, gd := range monitor.AllGuards() {
		kinds[gd.Name] = gd.Kind
	}
	compare := map[monitor.GuardKind]string{
		monitor.GuardCount:    " <= variables.limits.?%s.value()",
		monitor.GuardDuration: " <= duration(variables.limits.?%s.value())",
		monitor.GuardCost:     ".isGreaterThan(quantity(variables.limits.?%s.value()))",
	}
	field := regexp.MustCompile(`'spec\.guards\.(\w+): '`)
	pols := admissionPolicies(t)
	for kind, name := range limitsPolicies {
		p, ok := pols[name]
		if !ok {
			t.Fatalf("config/sidecar has no admission policy %s", name)
		}
		if p.Spec.ParamKind == nil || p.Spec.ParamKind.Kind != kind || p.Spec.ParamKind.APIVersion != twv1.GroupVersion.String() {
			t.Errorf("%s: paramKind %+v, want %s %s", name, p.Spec.ParamKind, twv1.GroupVersion, kind)
		}
		seen := map[string]int{}
		for _, v := range p.Spec.Validations {
			m := field.FindStringSubmatch(v.MessageExpression)
			if m == nil {
				t.Errorf("%s: a validation's message names no spec.guards field: %s", name, v.MessageExpression)
				continue
			}
			seen[m[1]]++
			if c, ok := compare[kinds[m[1]]]; !ok || !strings.Contains(v.Expression, strings.ReplaceAll(c, "%s", m[1])) {
				t.Errorf("%s: the validation of %s does not compare it as its kind says (%q): %s", name, m[1], c, v.Expression)
			}
			for _, read := range []string{"variables.limits.?", "variables.guards.?", "variables.old.?"} {
				if !strings.Contains(v.Expression, read+m[1]) {
					t.Errorf("%s: the validation of %s does not read %s%s", name, m[1], read, m[1])
				}
			}
		}
		lt := reflect.TypeFor[twv1.GuardLimits]()
		for i := range lt.NumField() {
			f, _, _ := strings.Cut(lt.Field(i).Tag.Get("json"), ",")
			if seen[f] != 1 {
				t.Errorf("%s: %d validations of spec.guards.%s, want 1", name, seen[f], f)
			}
			delete(seen, f)
		}
		for f := range seen {
			t.Errorf("%s: a validation of spec.guards.%s, which GuardLimits does not have", name, f)
		}
	}
	local, cluster := pols[limitsPolicies["TurnPolicy"]], pols[limitsPolicies["ClusterTurnPolicy"]]
	if !equality.Semantic.DeepEqual(local.Spec.Validations, cluster.Spec.Validations) {
		t.Errorf("%s and %s hold different validations", local.Name, cluster.Name)
	}
}

// The limits policies fail open: while the API server cannot resolve their
// param kind (right after it restarts) Fail would refuse every AgentRun
// write, the manager's own included; the controller caps the guards anyway
// (docs/policies.md#limits).
func TestLimitsPoliciesFailOpen(t *testing.T) {
	policies := admissionPolicies(t)
	for kind, name := range limitsPolicies {
		p, ok := policies[name]
		if !ok {
			t.Fatalf("no admission policy %s", name)
		}
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admv1.Ignore {
			t.Errorf("%s (params %s): failurePolicy %v, want Ignore", name, kind, p.Spec.FailurePolicy)
		}
	}
}
