//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeployKustomize tells the Helm story with `make deploy` (config/default,
// through the config/local-node overlay the local node needs): the manager
// runs in the cluster, a looping run trips, is rerolled and faults, and `make
// undeploy` leaves nothing that was not there before.
func TestDeployKustomize(t *testing.T) {
	needInstallMode(t)
	bin := needTools(t)
	clearOperator(t)
	before := snapshot(t)
	start := time.Now()
	img := installImageRepo + ":" + installImageTag
	makeVars := []string{"DEPLOY_OVERLAY=config/local-node", "IMG=" + img, "SIDECAR_IMG=" + img, "KUBECTL=" + filepath.Join(bin, "kubectl")}
	runMake(t, append([]string{"deploy"}, makeVars...)...)
	if _, err := kubectl("-n", releaseNS, "rollout", "status", "deployment/turnwatch-manager", "--timeout=3m"); err != nil {
		t.Fatalf("%v\n%s", err, releaseDebug())
	}
	env.report.add("make deploy to a Ready manager", time.Since(start))

	obj := agentRun("deploy-looping", runSpec{scenario: "identicalLoop", format: "claude", speed: 4})
	if _, err := kubectlApply(t, obj); err != nil {
		t.Fatal(err)
	}
	phase := waitPhase(t, "deploy-looping", 3*time.Minute)
	text := describe("agentrun", "deploy-looping")
	if phase != "Faulted" {
		t.Fatalf("phase %s, want Faulted\n%s\n%s", phase, text, releaseDebug())
	}
	if missing, ok := containsAll(text, "runaway", "identicalCalls", "repeated an identical tool call 4 times", "Rerolled", "deploy-looping-1"); !ok {
		t.Errorf("kubectl describe agentrun lacks %q:\n%s", missing, text)
	}

	runMake(t, append([]string{"undeploy"}, makeVars...)...)
	waitNothingLeft(t, before)
	env.report.add("make deploy to nothing left (whole test)", time.Since(start))
}

// runMake runs a make target of the repository against the node.
func runMake(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s"}, args...)...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s\n%s", strings.Join(args, " "), err, out, releaseDebug())
	}
	t.Logf("make %s:\n%s", args[0], tail(string(out), 15))
}

// waitPhase polls the run's phase with kubectl (no informer: the CRDs come
// and go between the install tests) until it is terminal.
func waitPhase(t *testing.T, name string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, _ := kubectl("-n", env.ns, "get", "agentrun", name, "-o", "jsonpath={.status.phase}")
		switch p := strings.TrimSpace(out); p {
		case "Succeeded", "Faulted", "Aborted":
			return p
		}
		if time.Now().After(deadline) {
			return strings.TrimSpace(out)
		}
		time.Sleep(time.Second)
	}
}
