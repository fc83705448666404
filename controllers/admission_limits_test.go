package controllers

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
