//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDemoCurrentCluster runs `make demo USE_CURRENT_CLUSTER=1` with the
// local node as "the current cluster" (KUBECONFIG, and a kubectl of the
// node's version first on PATH): the demo builds and loads its images, runs
// its manager and the scripted model, and tells the fault story of its five
// runs (one the real Claude Code); `make demo-down`
// then stops that manager and removes the demo's namespace.
func TestDemoCurrentCluster(t *testing.T) {
	needInstallMode(t)
	bin := needTools(t)
	clearOperator(t)
	start := time.Now()
	environ := append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "PATH="+bin+":"+os.Getenv("PATH"), "DEMO_TIMEOUT=240")
	demo := func(target string) string {
		cmd := exec.Command("make", "-s", target, "USE_CURRENT_CLUSTER=1")
		cmd.Dir, cmd.Env = env.root, environ
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s USE_CURRENT_CLUSTER=1: %v\n%s", target, err, tail(string(out), 40))
		}
		return string(out)
	}
	t.Cleanup(func() {
		if _, running := demoManagerRunning(); running {
			cmd := exec.Command("make", "-s", "demo-down", "USE_CURRENT_CLUSTER=1")
			cmd.Dir, cmd.Env = env.root, environ
			_ = cmd.Run()
		}
	})
	out := demo("demo")
	env.report.add("make demo USE_CURRENT_CLUSTER=1", time.Since(start))
	t.Logf("make demo USE_CURRENT_CLUSTER=1:\n%s", tail(out, 30))
	wants := []string{"using the current cluster (turnwatch-node)", "looping=Faulted", "whitespace-spiral=Faulted",
		"silent=Succeeded", "healthy=Succeeded", "claude-looping=Faulted", "Runaway", "Degenerate", "Rerolled",
		"repeated an identical tool call 4 times", "kubectl describe agentrun claude-looping"}
	if missing, ok := containsAll(out, wants...); !ok {
		t.Errorf("the demo's output lacks %q:\n%s", missing, out)
	}
	demoRuns := []string{"claude-looping", "healthy", "looping", "silent", "whitespace-spiral"}
	t.Logf("the demo's kubectl get agentruns rows: %q", agentrunRows(out, demoRuns))
	if err := checkReadmeTable(env.root, out, demoRuns); err != nil {
		t.Error(err)
	}

	demo("demo-down")
	if pid, running := demoManagerRunning(); running {
		t.Errorf("the demo's manager (pid %d) still runs after make demo-down", pid)
	}
	err := waitFor(t.Context(), 2*time.Minute, "the demo's namespace to go", func() (bool, error) {
		out, err := kubectl("get", "namespace", "turnwatch-demo", "--ignore-not-found", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", nil
	})
	if err != nil {
		left, _ := kubectl("-n", "turnwatch-demo", "get", "agentruns,pods", "-o", "wide")
		t.Errorf("%v: make demo-down left the namespace behind:\n%s", err, left)
	}
}
