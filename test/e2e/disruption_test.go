//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// nodeSocket is the node's containerd socket (hack/node/lib.sh).
func nodeSocket() string {
	dir := os.Getenv("TURNWATCH_NODE_DIR")
	if dir == "" {
		cache := os.Getenv("TURNWATCH_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "turnwatch")
		}
		dir = filepath.Join(cache, "node")
	}
	return filepath.Join(dir, "run", "containerd.sock")
}

// waitPodOfRun waits for the Pod of the run's first turn to run.
func waitPodOfRun(t *testing.T, name string) string {
	t.Helper()
	var pod string
	err := waitFor(context.Background(), 2*time.Minute, "the Pod of "+name+" to run", func() (bool, error) {
		turns := turnsOf(name)
		if len(turns) == 0 {
			return false, nil
		}
		p, ok := podOfTurn(name, turns[0])
		if !ok {
			return false, nil
		}
		pod = p.Name
		cs, ok := containerStatus(p, "agent")
		return ok && cs.State.Running != nil, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, debugRun(name))
	}
	return pod
}

// TestSidecarKilledMidRun kills the sidecar after it reported the nudge: the
// kubelet restarts it (a native sidecar), it replays the log from the start,
// reaches the same state, and reports nothing twice.
func TestSidecarKilledMidRun(t *testing.T) {
	needOperator(t)
	t.Parallel()
	const name = "disrupt-sidecar"
	spec := runSpec{scenario: "silent", format: "pi", speed: 0.5}
	createRun(t, name, spec)
	pod := waitPodOfRun(t, name)

	var before corev1.PodCondition
	err := waitFor(context.Background(), 3*time.Minute, "the nudge", func() (bool, error) {
		p, _ := podOf(pod)
		c, ok := podCondition(p, protocol.ConditionSilent)
		before = c
		return ok && c.Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, debugRun(name))
	}
	p, _ := podOf(pod)
	cs, ok := containerStatus(p, protocol.SidecarContainerName)
	if !ok || cs.ContainerID == "" {
		t.Fatalf("no running sidecar container in Pod %s", pod)
	}
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	out, err := exec.Command("ctr", "--address", nodeSocket(), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
	if err != nil {
		t.Fatalf("killing the sidecar: %v\n%s", err, out)
	}
	t.Logf("killed sidecar container %s of Pod %s after the nudge", id[:12], pod)

	waitRun(t, name, 4*time.Minute)
	r, _ := getRun(name)
	if got := str(r, "status", "phase"); got != "Succeeded" {
		t.Fatalf("phase %s, want Succeeded\n%s", got, debugRun(name))
	}
	p, _ = podOf(pod)
	if cs, _ := containerStatus(p, protocol.SidecarContainerName); cs.RestartCount < 1 {
		t.Errorf("the sidecar's restartCount is %d: the kill did not restart it", cs.RestartCount)
	}
	after, _ := podCondition(p, protocol.ConditionSilent)
	if !after.LastTransitionTime.Equal(&before.LastTransitionTime) || after.Message != before.Message {
		t.Errorf("the restarted sidecar rewrote the nudge: %+v, was %+v", after, before)
	}
	if n, _ := runEvents(name, "Nudged"); n != 1 {
		t.Errorf("%d Nudged events, want exactly 1", n)
	}
	checkSummary(t, p, spec, 18, protocol.ReasonResult)
}

// TestAPIServerRestartMidRun restarts kube-apiserver while a run streams:
// the sidecar's log follow drops and resumes where it stopped, the manager's
// watches come back, and nothing is lost or counted twice.
func TestAPIServerRestartMidRun(t *testing.T) {
	needOperator(t)
	const name = "disrupt-apiserver"
	spec := runSpec{scenario: "silent", format: "pi", speed: 0.5}
	createRun(t, name, spec)
	pod := waitPodOfRun(t, name)
	time.Sleep(8 * time.Second) // into the stream, before the nudge

	start := time.Now()
	if _, err := script(env.root, "hack/node-up.sh", "--restart", "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	env.report.add("kube-apiserver restart (stop to ready)", time.Since(start))
	t.Logf("restarted kube-apiserver in %v", time.Since(start).Round(time.Millisecond))

	waitRun(t, name, 4*time.Minute)
	r, _ := getRun(name)
	if got := str(r, "status", "phase"); got != "Succeeded" {
		t.Fatalf("phase %s, want Succeeded\n%s", got, debugRun(name))
	}
	if got := num(r, "status", "steps"); got != 18 {
		t.Errorf("status.steps = %d, want 18", got)
	}
	if n, _ := runEvents(name, "Nudged"); n != 1 {
		t.Errorf("%d Nudged events, want exactly 1", n)
	}
	p, _ := podOf(pod)
	checkSummary(t, p, spec, 18, protocol.ReasonResult)
}
