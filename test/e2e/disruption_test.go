//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// nodeDir is the node's state folder (hack/node/lib.sh).
func nodeDir() string {
	if dir := os.Getenv("TURNWATCH_NODE_DIR"); dir != "" {
		return dir
	}
	cache := os.Getenv("TURNWATCH_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "turnwatch")
	}
	return filepath.Join(cache, "node")
}

// nodeSocket is the node's containerd socket.
func nodeSocket() string { return filepath.Join(nodeDir(), "run", "containerd.sock") }

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
	spec := runSpec{scenario: "silentRun", format: "pi", speed: 0.5}
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
	id := killSidecar(t, pod)
	t.Logf("killed sidecar container %s of Pod %s after the nudge", id[:12], pod)

	waitRun(t, name, 4*time.Minute)
	r, _ := getRun(name)
	if got := str(r, "status", "phase"); got != "Succeeded" {
		t.Fatalf("phase %s, want Succeeded\n%s", got, debugRun(name))
	}
	p, _ := podOf(pod)
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

// killSidecar SIGKILLs the Pod's running sidecar container through
// containerd, as a crash would, and returns its container id.
func killSidecar(t *testing.T, pod string) string {
	t.Helper()
	p, _ := podOf(pod)
	cs, ok := containerStatus(p, protocol.SidecarContainerName)
	if !ok || cs.ContainerID == "" || cs.State.Running == nil {
		t.Fatalf("no running sidecar container in Pod %s", pod)
	}
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	out, err := exec.Command("ctr", "--address", nodeSocket(), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
	if err != nil {
		t.Fatalf("killing the sidecar: %v\n%s", err, out)
	}
	return id
}

// TestAPIServerRestartMidRun restarts kube-apiserver while a run streams:
// the sidecar's log follow drops and resumes where it stopped, the manager's
// watches come back, and nothing is lost or counted twice.
func TestAPIServerRestartMidRun(t *testing.T) {
	needOperator(t)
	const name = "disrupt-apiserver"
	spec := runSpec{scenario: "silentRun", format: "pi", speed: 0.5}
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

// Padding for TestSidecarKilledAfterRotation: 16000 bytes after each of the
// silent scenario's 223 lines make a 3.6 MB stream; at speed 0.25 (about
// 96 s) that is about 38 KB/s, so the kubelet (containerLogMaxSize 1Mi,
// hack/node-up.sh) rotates the agent's log about every 27 s: once before the
// kill, and not again before the restarted sidecar resumes.
const (
	rotationPad   = "16000"
	rotationSpeed = 0.25
)

// TestSidecarKilledAfterRotation kills the sidecar after the kubelet rotated
// the agent's log: the lines before the rotation are gone from the log the
// API serves, so a sidecar that read the log again from its start would count
// fewer lines. The restarted sidecar resumes from its checkpoint (engine
// state and log cursor, in its own volume) and must end with exactly what
// `turnwatch-sidecar replay` computes over the whole stream: steps, cost,
// lines, trips and nudges. The nudge comes late in the stream, after the
// restart, so the restored engine is the one that finds it.
func TestSidecarKilledAfterRotation(t *testing.T) {
	needOperator(t)
	const name = "disrupt-rotation"
	spec := runSpec{scenario: "silentRun", format: "pi", speed: rotationSpeed, extraArgs: []string{"--pad", rotationPad}}
	want := replayScenario(t, spec)
	createRun(t, name, spec)
	pod := waitPodOfRun(t, name)
	p, _ := podOf(pod)
	logDir := filepath.Join(nodeDir(), "pod-logs", env.ns+"_"+pod+"_"+string(p.UID), "agent")

	var rotated []string
	err := waitFor(context.Background(), 3*time.Minute, "the kubelet to rotate the agent's log in "+logDir, func() (bool, error) {
		rotated, _ = filepath.Glob(filepath.Join(logDir, "*.log.*"))
		return len(rotated) > 0, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, debugRun(name))
	}
	// The API serves only the current log file to a new request, so the
	// checkpoint's cursor must be past the rotation before the kill: wait for
	// it rather than for a fixed time (a busy machine's sidecar lags).
	waitCheckpointPast(t, p, rotated[0])
	p, _ = podOf(pod)
	if c, ok := podCondition(p, protocol.ConditionSilent); ok && c.Status == corev1.ConditionTrue {
		t.Logf("the nudge came before the kill (%s): the restored engine did not find it", c.Message)
	}
	id := killSidecar(t, pod)
	t.Logf("killed sidecar container %s of Pod %s after the rotation to %s", id[:12], pod, filepath.Base(rotated[0]))

	waitRun(t, name, 5*time.Minute)
	r, _ := getRun(name)
	if got := str(r, "status", "phase"); got != "Succeeded" {
		t.Fatalf("phase %s, want Succeeded\n%s", got, debugRun(name))
	}
	p, _ = podOf(pod)
	if cs, _ := containerStatus(p, protocol.SidecarContainerName); cs.RestartCount < 1 {
		t.Errorf("the sidecar's restartCount is %d: the kill did not restart it", cs.RestartCount)
	}
	// The log really rotated: what the API serves now lacks the first lines.
	logs, err := env.kube.CoreV1().Pods(env.ns).GetLogs(pod, &corev1.PodLogOptions{Container: "agent"}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	if served := strings.Count(string(logs), "\n"); served >= want.Lines {
		t.Errorf("the API serves %d lines of the agent's log, the stream has %d: the log did not rotate", served, want.Lines)
	}

	s, ok := summary(p)
	if !ok {
		t.Fatalf("Pod %s has no summary\n%s", pod, debugRun(name))
	}
	if s.Steps != int64(want.Steps) || !sameDecimal(s.CostUSD(), want.CostUSD) || s.Lines != want.Lines || s.Unparsed != want.Unparsed ||
		s.Result != want.Result || s.StopReason != want.StopReason || !s.Complete {
		t.Errorf("summary after the restart %+v, want replay's steps %d, cost %s, lines %d, unparsed %d, result %v, stop %q, complete",
			s, want.Steps, want.CostUSD, want.Lines, want.Unparsed, want.Result, want.StopReason)
	}
	if got := num(r, "status", "steps"); got != int64(want.Steps) {
		t.Errorf("status.steps = %d, want %d", got, want.Steps)
	}
	if got := str(r, "status", "costUSD"); !sameDecimal(got, want.CostUSD) {
		t.Errorf("status.costUSD = %s, want %s", got, want.CostUSD)
	}
	checkTrips(t, p, want.Trips)
	checkNudges(t, name, p, want.Nudges)
}

// waitCheckpointPast waits until the sidecar's checkpoint (in its state
// volume on the node) has a log cursor later than the rotated file's last
// write: the lines it has not read yet are all in the current file.
func waitCheckpointPast(t *testing.T, p *corev1.Pod, rotated string) {
	t.Helper()
	fi, err := os.Stat(rotated)
	if err != nil {
		t.Fatalf("the rotated log: %v", err)
	}
	path := filepath.Join(nodeDir(), "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir",
		"turnwatch-sidecar-state", "checkpoint.json")
	var since time.Time
	err = waitFor(context.Background(), 2*time.Minute, "the sidecar's checkpoint to pass the rotation", func() (bool, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, nil
		}
		var ck struct {
			Since time.Time `json:"since"`
		}
		if json.Unmarshal(b, &ck) != nil {
			return false, nil
		}
		since = ck.Since
		return since.After(fi.ModTime()), nil
	})
	if err != nil {
		t.Fatalf("%v (cursor %v, rotation %v, %s)", err, since, fi.ModTime(), path)
	}
	t.Logf("the checkpoint's cursor %v is past the rotation at %v", since, fi.ModTime())
}

// replayScenario runs `turnwatch-sidecar replay` over the stream the fake
// agent plays for spec (fakeagent --dump), the uninterrupted reference.
func replayScenario(t *testing.T, spec runSpec) monitor.Report {
	t.Helper()
	args := append([]string{"--scenario", spec.scenario, "--format", spec.format, "--dump"}, spec.extraArgs...)
	stream, err := exec.Command(filepath.Join(env.artifacts, "fakeagent"), args...).Output()
	if err != nil {
		t.Fatalf("fakeagent %v: %v", args, err)
	}
	cmd := exec.Command(filepath.Join(env.artifacts, "turnwatch-sidecar"), "replay", "--format", spec.format, "-")
	cmd.Stdin = bytes.NewReader(stream)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("turnwatch-sidecar replay: %v", err)
	}
	var rep monitor.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("replay's report %q: %v", out, err)
	}
	t.Logf("replay of the %d-byte stream: %d lines, %d steps, cost %s, %d trips, %d nudges",
		len(stream), rep.Lines, rep.Steps, rep.CostUSD, len(rep.Trips), len(rep.Nudges))
	return rep
}

// checkTrips: the Pod shows the trip replay found (the first; it stops the
// turn), or none.
func checkTrips(t *testing.T, p *corev1.Pod, trips []monitor.Trip) {
	t.Helper()
	c, ok := podCondition(p, protocol.ConditionTripped)
	tripped := ok && c.Status == corev1.ConditionTrue
	switch {
	case len(trips) == 0 && tripped:
		t.Errorf("Pod %s tripped (%s: %s), replay found no trip", p.Name, c.Reason, c.Message)
	case len(trips) > 0 && !tripped:
		t.Errorf("Pod %s did not trip, replay found %+v", p.Name, trips[0])
	case len(trips) > 0 && (c.Reason != protocol.ReasonFor(trips[0].Detector) || c.Message != trips[0].Message):
		t.Errorf("Pod %s tripped %s: %q, replay %s: %q", p.Name, c.Reason, c.Message, trips[0].Detector, trips[0].Message)
	}
}

// checkNudges: the Pod's Silent condition names replay's last streak with
// its message, and the run has one Nudged Event per streak.
func checkNudges(t *testing.T, run string, p *corev1.Pod, nudges []monitor.Nudge) {
	t.Helper()
	if n, _ := runEvents(run, "Nudged"); int(n) != len(nudges) {
		t.Errorf("%d Nudged events, replay found %d nudges", n, len(nudges))
	}
	c, ok := podCondition(p, protocol.ConditionSilent)
	if len(nudges) == 0 {
		if ok && c.Status == corev1.ConditionTrue {
			t.Errorf("Pod %s was nudged (%s), replay found no nudge", p.Name, c.Message)
		}
		return
	}
	if want := protocol.NudgeMessage(len(nudges), nudges[len(nudges)-1].Message); !ok || c.Message != want {
		t.Errorf("Pod %s Silent condition %q, want %q", p.Name, c.Message, want)
	}
}
