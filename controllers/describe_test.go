package controllers

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// `kubectl describe agentrun` tells the whole story: which detector, its
// message, which turn, what was done. And `kubectl get` shows the columns.
func TestKubectlTellsTheStory(t *testing.T) {
	needEnv(t)
	if _, err := os.Stat(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")); err != nil {
		t.Skip("no kubectl beside the envtest binaries")
	}
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "story"))
	waitPod(t, ns, "story-0")
	playSidecar(t, ns, "story-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	waitPod(t, ns, "story-1")
	playSidecar(t, ns, "story-1", trip(monitor.DetectorStepBudget, "exceeded 256 steps"))
	runPhase(t, ns, "story", twv1.RunFaulted)
	waitEvents(t, ns, "story", agentrun.EventFaulted, 1)

	kubectl := func(args ...string) string {
		out, errOut, err := testEnv.ControlPlane.KubeCtl().Run(append(args, "-n", ns)...)
		o, _ := io.ReadAll(out)
		if err != nil {
			e, _ := io.ReadAll(errOut)
			t.Fatalf("kubectl %v: %v: %s", args, err, e)
		}
		return string(o)
	}
	describe := kubectl("describe", "agentrun", "story")
	if err := containsAll(describe,
		"Phase:", "Faulted", "Attempts:", "2",
		"Detector:", "stepBudget", "Message:", "exceeded 256 steps", "Turn:", "story-1",
		"Rerolled", "repeated an identical tool call 4 times", "rerolling as turn story-1",
		"no reroll left (1 of 1 used)",
	); err != nil {
		t.Errorf("describe: %v\n%s", err, describe)
	}
	get := kubectl("get", "agentruns")
	if err := containsAll(get, "PHASE", "ATTEMPTS", "STEPS", "COST", "REASON", "AGE", "story", "Faulted", "Runaway"); err != nil {
		t.Errorf("get agentruns: %v\n%s", err, get)
	}
	turns := kubectl("get", "agentturns")
	if err := containsAll(turns, "RUN", "ATTEMPT", "OUTCOME", "ERROR", "STEPS", "story-1", "Failed", "runaway"); err != nil {
		t.Errorf("get agentturns: %v\n%s", err, turns)
	}
	if testing.Verbose() {
		t.Logf("%s\n%s\n%s", describe, get, turns)
	}
}
