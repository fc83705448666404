package controllers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
