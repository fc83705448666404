package controllers

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
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

// `kubectl describe` of a metered run, its turn and its Pod shows the
// stream's cost beside the metered one and never the gateway's key: the
// key is in the Secret only (docs/gateway.md).
func TestKubectlDescribeMeteredRun(t *testing.T) {
	needEnv(t)
	if _, err := os.Stat(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")); err != nil {
		t.Skip("no kubectl beside the envtest binaries")
	}
	t.Parallel()
	ns := newNamespace(t)
	const key = "sk-ant-test-0123456789-NEVER-SHOWN"
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns}, StringData: map[string]string{"api-key": key}})
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "metered", func(r *twv1.AgentRun) {
		r.Spec.Model = &twv1.Model{Gateway: testGateway()}
		r.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ANTHROPIC_API_KEY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "api-key"}}}}
	}))
	waitPod(t, ns, "metered-0")
	playSidecar(t, ns, "metered-0", finishedCond(protocol.Summary{Progress: protocol.Progress{Steps: 3, Cost: usd("0.75"), StreamCost: usd("0.5")},
		Result: true, StopReason: "end", Complete: true}))
	turnSettled(t, ns, "metered-0")
	eventually(t, "the run to list the turn's costs", func() error {
		run, err := getRun(ns, "metered")
		if err != nil || len(run.Status.Turns) != 1 || run.Status.Turns[0].StreamCostUSD == "" {
			return fmt.Errorf("turns %+v (%v)", run.Status.Turns, err)
		}
		return nil
	})
	var all string
	for _, what := range []string{"pod/metered-0", "agentturn/metered-0", "agentrun/metered"} {
		out, errOut, err := testEnv.ControlPlane.KubeCtl().Run("describe", what, "-n", ns)
		o, _ := io.ReadAll(out)
		if err != nil {
			e, _ := io.ReadAll(errOut)
			t.Fatalf("kubectl describe %s: %v: %s", what, err, e)
		}
		all += string(o)
	}
	if strings.Contains(all, key) {
		t.Errorf("kubectl describe shows the key:\n%s", all)
	}
	if err := containsAll(all, "Stream Cost USD:", "0.5", "Cost USD:", "0.75", render.ModelKeyVolume, "turnwatch-placeholder-"); err != nil {
		t.Errorf("describe: %v\n%s", err, all)
	}
}
