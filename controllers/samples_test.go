package controllers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The samples in config/samples are accepted by the CRDs.
func TestSamplesAreValid(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "turnwatch_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		run := &twv1.AgentRun{}
		if err := yaml.UnmarshalStrict(b, run); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		run.Namespace = ns
		if err := k8s.Create(context.Background(), run, client.DryRunAll); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The policy samples (config/samples/policy_*.yaml, README's "For platform
// teams") are accepted by the CRDs, every field known; a namespaced
// policy is tried in the test's namespace.
func TestPolicySamplesAreValid(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "policy_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no policy samples: %v", err)
	}
	for _, f := range files {
		for i, doc := range yamlDocuments(t, f) {
			obj := policyObject(t, f, doc)
			if obj.GetNamespace() != "" {
				obj.SetNamespace(ns)
			}
			if err := k8s.Create(context.Background(), obj, client.DryRunAll); err != nil {
				t.Errorf("%s, document %d (%s): %v", f, i+1, obj.GetName(), err)
			}
		}
	}
}

// yamlDocuments splits a file of YAML documents.
func yamlDocuments(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// policyObject decodes a TurnPolicy or ClusterTurnPolicy strictly, so a
// field the type does not know fails the test.
func policyObject(t *testing.T, path string, doc []byte) client.Object {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var obj client.Object
	switch u.GetKind() {
	case "TurnPolicy":
		obj = &twv1.TurnPolicy{}
	case "ClusterTurnPolicy":
		obj = &twv1.ClusterTurnPolicy{}
	default:
		t.Fatalf("%s: kind %q, want TurnPolicy or ClusterTurnPolicy", path, u.GetKind())
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// README's "For platform teams" shows config/samples/policy_team.yaml as it
// is, but for the file's opening comment.
func TestReadmeShowsPolicySample(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join("..", "config", "samples", "policy_team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	body := sample
	for bytes.HasPrefix(body, []byte("#")) {
		_, body, _ = bytes.Cut(body, []byte("\n"))
	}
	if !bytes.Contains(readme, []byte("```yaml\n"+string(body)+"```\n")) {
		t.Errorf("README.md does not show config/samples/policy_team.yaml as it is; its YAML block must read:\n%s", body)
	}
}
