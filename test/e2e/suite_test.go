//go:build e2e

// Package e2e runs turnwatch end to end on a real single-node cluster
// (hack/node-up.sh): the manager as a host process against it, AgentRuns whose
// agent container is the scripted fake agent, and the real sidecar beside it.
//
//	make test-e2e     (or: go test -tags e2e ./test/e2e -v -timeout 60m)
//
// Env: TURNWATCH_E2E_KEEP_NODE=1 leaves a node this run brought up running;
// TURNWATCH_E2E_REPORT=FILE writes the measurements into FILE's "End-to-end"
// section (docs/performance.md); TURNWATCH_E2E_MANAGER_ARGS adds manager flags.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The images the harness builds with hack/image.sh and the node runs.
const (
	fakeAgentImage = "turnwatch.dev/fakeagent:dev"
	sidecarImage   = "turnwatch.dev/sidecar:dev"
	managerImage   = "turnwatch.dev/manager:dev"
)

// env is what TestMain set up, shared by every test.
var env struct {
	root       string // repository root
	kubeconfig string
	bin        string // kube binaries (kubectl)
	artifacts  string // bin/e2e: built binaries, logs, the report
	cfg        *rest.Config
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	ns         string
	obs        *observer
	report     *report
}

func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	if code >= 0 {
		os.Exit(code)
	}
	code = m.Run()
	teardown(code)
	os.Exit(code)
}

// wasUp remembers whether the node was up before this run, so the run
// leaves the machine as it found it.
var wasUp bool

func setup() (int, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	env.root = root
	env.artifacts = filepath.Join(root, "bin", "e2e")
	if err := os.MkdirAll(env.artifacts, 0o755); err != nil {
		return 0, err
	}
	wasUp = exec.Command(filepath.Join(root, "hack", "node-up.sh"), "--status").Run() == nil

	start := time.Now()
	logf("bringing the node up (hack/node-up.sh)")
	kc, err := script(root, "hack/node-up.sh")
	if err != nil {
		return 0, fmt.Errorf("the local node could not start: %w", err)
	}
	env.kubeconfig = kc
	env.report = newReport()
	env.report.add("node up (this run)", time.Since(start))
	if env.bin, err = script(root, "hack/kube-bins.sh", "kubectl"); err != nil {
		return 0, err
	}

	start = time.Now()
	if err := buildImages(); err != nil {
		return 0, err
	}
	env.report.add("binaries and images", time.Since(start))

	if env.cfg, err = clientcmd.BuildConfigFromFlags("", kc); err != nil {
		return 0, err
	}
	env.cfg.QPS, env.cfg.Burst = 50, 100
	env.kube = kubernetes.NewForConfigOrDie(env.cfg)
	env.dyn = dynamic.NewForConfigOrDie(env.cfg)
	env.ns = fmt.Sprintf("e2e-%d", time.Now().Unix())
	if err := runNamespace(env.ns); err != nil {
		return 0, err
	}
	env.obs = newObserver()
	env.obs.start(context.Background(), env.ns)
	return -1, nil
}

func teardown(code int) {
	stopAgentSandbox()
	stopManager()
	if env.report != nil {
		env.report.write()
	}
	if code == 0 && env.ns != "" {
		_, _ = kubectl("delete", "namespace", env.ns, "--wait=false")
	}
	if !wasUp && os.Getenv("TURNWATCH_E2E_KEEP_NODE") == "" {
		logf("tearing the node down (it was not up before this run; TURNWATCH_E2E_KEEP_NODE=1 keeps it)")
		if out, err := exec.Command(filepath.Join(env.root, "hack", "node-down.sh")).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: node-down: %v\n%s", err, out)
		}
	}
}

// buildImages builds the static binaries and imports their images.
func buildImages() error {
	bins := map[string]string{
		"fakeagent":         "./test/fakeagent",
		"turnwatch-sidecar": "./cmd/turnwatch-sidecar",
		"turnwatch-hook":    "./cmd/turnwatch-hook",
		"manager":           "./cmd/manager",
	}
	for name, pkg := range bins {
		logf("go build %s", pkg)
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(env.artifacts, name), pkg)
		cmd.Dir = env.root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// The sidecar's image carries the nudge hook it copies for the agent.
	for image, bins := range map[string][]string{"fakeagent": {"fakeagent"}, "sidecar": {"turnwatch-sidecar", "turnwatch-hook"}, "manager": {"manager"}} {
		args := []string{"--user", "65532", image}
		for _, b := range bins {
			args = append(args, filepath.Join(env.artifacts, b))
		}
		if _, err := script(env.root, "hack/image.sh", args...); err != nil {
			return err
		}
	}
	return nil
}

// script runs a repository script and returns the last line of its stdout;
// its stderr (progress) streams to the test's stderr.
func script(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// runNamespace creates a namespace for runs on the node, labelled with the
// administrator's consent to the node's network (twv1.LabelHostNetwork):
// every Pod here needs it, the node has no Pod network (docs/e2e.md).
func runNamespace(name string) error {
	if _, err := kubectl("create", "namespace", name); err != nil {
		return err
	}
	return consentHostNetwork(name)
}

// consentHostNetwork labels a namespace as the administrator consents to
// the node's network for its runs.
func consentHostNetwork(ns string) error {
	_, err := kubectl("label", "namespace", ns, twv1.LabelHostNetwork+"="+twv1.HostNetworkAllowed, "--overwrite")
	return err
}

// kubectl runs the node's kubectl with the admin kubeconfig.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(env.bin, "kubectl"), append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}
