// Package samples_test checks config/samples: every sample is a valid
// AgentRun (strictly decoded here, and admitted by a real API server with the
// generated CRDs when envtest is available), and each cli_*.yaml runs its CLI
// with the flags that make it print the event stream its format names.
package samples_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

const samplesDir = "../../config/samples"

// cliSamples are the real agent CLIs: the format each sample must name and
// the pieces of its command line that make the CLI print that stream.
var cliSamples = []struct {
	file   string
	format twv1.Format
	flags  []string
}{
	{"cli_claude.yaml", "claude", []string{" -p ", "--output-format stream-json", "--verbose"}},
	{"cli_pi.yaml", "pi", []string{"--mode json"}},
	{"cli_codex.yaml", "codex", []string{" exec --json"}},
	{"cli_opencode.yaml", "opencode", []string{" run --format json"}},
	{"cli_gemini.yaml", "gemini", []string{" -p ", "--output-format stream-json"}},
}

// readRun decodes one sample strictly: an unknown or misspelled field fails.
func readRun(t *testing.T, path string) *twv1.AgentRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run twv1.AgentRun
	if err := yaml.UnmarshalStrict(b, &run); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if run.Kind != "AgentRun" || run.APIVersion != twv1.GroupVersion.String() {
		t.Fatalf("%s: kind %s %s, want AgentRun %s", filepath.Base(path), run.APIVersion, run.Kind, twv1.GroupVersion)
	}
	return &run
}

// agent returns the sample's agent container (spec.agentContainer, else the first).
func agent(t *testing.T, run *twv1.AgentRun) corev1.Container {
	t.Helper()
	for _, c := range run.Spec.Template.Spec.Containers {
		if run.Spec.AgentContainer == "" || c.Name == run.Spec.AgentContainer {
			return c
		}
	}
	t.Fatalf("%s: no agent container", run.Name)
	return corev1.Container{}
}

func TestCLISamples(t *testing.T) {
	for _, tc := range cliSamples {
		t.Run(tc.file, func(t *testing.T) {
			run := readRun(t, filepath.Join(samplesDir, tc.file))
			if run.Spec.Format != tc.format {
				t.Errorf("format = %q, want %q", run.Spec.Format, tc.format)
			}
			c := agent(t, run)
			// The whole command line, one space between words, padded so that
			// " -p " also matches at either end.
			words := strings.Fields(strings.Join(append(append([]string{}, c.Command...), c.Args...), " "))
			line := " " + strings.Join(words, " ") + " "
			for _, f := range tc.flags {
				if !strings.Contains(line, f) {
					t.Errorf("command line %q lacks %q", line, f)
				}
			}
			// The prompt comes from the env the controller injects, quoted for the shell.
			if !strings.Contains(line, `"$`+protocol.EnvPrompt+`"`) {
				t.Errorf("command line %q does not pass \"$%s\"", line, protocol.EnvPrompt)
			}
		})
	}
}

// TestSamplesAdmitted creates every AgentRun in config/samples, as a server-side
// dry run, on a real API server with the generated CRDs and turnwatch's
// admission policies: the schema, its CEL rules and the policies must accept
// them. The namespace consents to the node's network, as the local node's do
// (the demo's samples use it; docs/e2e.md).
func TestSamplesAdmitted(t *testing.T) {
	_, cfg := testenv.StartT(t, filepath.Join("config", "crd", "bases"))
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, twv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := testenv.InstallSidecarPolicy(ctx, c); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "samples", Labels: map[string]string{twv1.LabelHostNetwork: twv1.HostNetworkAllowed}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The policies take a moment to load: until then a demo sample is
	// admitted in a namespace that does not consent to the node's network.
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-host-network"}}
	if err := c.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	hostNet := readRun(t, filepath.Join(samplesDir, "demo", "healthy.yaml"))
	hostNet.Namespace = plain.Name
	var refused error
	if err := testenv.WaitFor(ctx, 30*time.Second, 200*time.Millisecond, "the admission policies", nil, func() (bool, error) {
		refused = c.Create(ctx, hostNet.DeepCopy(), client.DryRunAll)
		return refused != nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refused.Error(), "spec.template.spec.hostNetwork") {
		t.Errorf("the demo sample without consent: %v, want refused naming spec.template.spec.hostNetwork", refused)
	}
	paths, _ := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	demo, _ := filepath.Glob(filepath.Join(samplesDir, "demo", "*.yaml"))
	paths = append(paths, demo...)
	if len(paths) < len(cliSamples) {
		t.Fatalf("found %d samples, want at least %d", len(paths), len(cliSamples))
	}
	for _, p := range paths {
		// Policy samples hold other kinds: TestPolicySamplesAreValid
		// (controllers) admits them.
		if b := filepath.Base(p); b == "kustomization.yaml" || strings.HasPrefix(b, "policy_") {
			continue
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			run := readRun(t, p)
			run.Namespace = ns.Name
			if err := c.Create(ctx, run, client.DryRunAll); err != nil {
				t.Errorf("the API server refuses it: %v", err)
			}
		})
	}

	// The check can fail: a sample the schema must refuse.
	bad := readRun(t, filepath.Join(samplesDir, cliSamples[0].file))
	bad.Namespace = ns.Name
	bad.Spec.Format = "shell"
	if err := c.Create(ctx, bad, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "spec.format") {
		t.Errorf("format %q admitted (err %v); the schema check is not effective", bad.Spec.Format, err)
	}
}
