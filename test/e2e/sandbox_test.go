//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"turnwatch.dev/turnwatch/test/internal/agentsandbox"
)

var agentSandbox struct {
	once sync.Once
	err  error
	ctrl *agentsandbox.Controller
}

// needAgentSandbox builds the real agent-sandbox controller at its pinned
// version (hack/agent-sandbox.sh, from the Go module proxy), applies its
// CRDs and starts it as a host process against the node, as the manager
// runs, once per run; teardown stops it. Its log is bin/e2e/agent-sandbox.log.
func needAgentSandbox(t *testing.T) {
	t.Helper()
	agentSandbox.once.Do(func() { agentSandbox.err = startAgentSandbox() })
	if agentSandbox.err != nil {
		t.Fatalf("the agent-sandbox controller could not start: %v", agentSandbox.err)
	}
}

func startAgentSandbox() error {
	start := time.Now()
	dir, err := agentsandbox.Build(env.root)
	if err != nil {
		return err
	}
	env.report.add("agent-sandbox controller ("+agentsandbox.Script+")", time.Since(start))
	if err := agentsandbox.InstallCRDs(context.Background(), filepath.Join(env.bin, "kubectl"), env.kubeconfig, dir); err != nil {
		return err
	}
	ctrl, err := agentsandbox.Start(dir, env.kubeconfig, filepath.Join(env.artifacts, "agent-sandbox.log"))
	if err != nil {
		return err
	}
	agentSandbox.ctrl = ctrl
	logf("agent-sandbox controller started (pid %d, %s), log in %s", ctrl.Pid(), strings.Join(agentsandbox.Args(env.kubeconfig), " "), ctrl.Log)
	return nil
}

func stopAgentSandbox() {
	if c := agentSandbox.ctrl; c != nil {
		agentSandbox.ctrl = nil
		c.Stop()
	}
}

// TestAttachSandbox: attach under an agent-sandbox Sandbox reconciled by
// the real agent-sandbox controller (docs/attach.md). In a namespace
// labelled for attach, a Sandbox whose pod template is pi's sample's,
// labelled turnwatch.dev/watch=pi, against a scripted model playing
// identicalLoop: the controller makes the Pod, the admission policy
// injects the sidecar, the sidecar trips, the Pod fails with the Tripped
// condition, and its AgentTurn names the Pod's UID and the Sandbox as its
// owner. What the Sandbox and its controller do then is logged. The
// Sandbox's reroll is its user's: the failed Pod deleted, the controller
// makes the next one of the same name, another turn of its own UID.
func TestAttachSandbox(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	needAgentSandbox(t)
	ns := attachNamespace(t, "sandbox")
	sample := readSampleRun(t, filepath.Join(env.root, "config/samples/cli_pi.yaml"))
	model, url := loopModel(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(modelLog(model))
		}
	})
	sb, err := agentsandbox.Sandbox(ns, "loop-sandbox", attachTemplate(t, sample, url))
	if err != nil {
		t.Fatal(err)
	}
	if sb, err = env.dyn.Resource(agentsandbox.SandboxGVR).Namespace(ns).Create(context.Background(), sb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitPodEnded(t, ns, sb.GetName(), "")
	checkSandboxPod(t, sb, pod)
	logSandboxAfter(t, ns, sb.GetName(), pod)
	t.Run("reroll", func(t *testing.T) {
		if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		next := waitPodEnded(t, ns, sb.GetName(), pod.UID)
		checkSandboxPod(t, sb, next)
	})
}

// checkSandboxPod: the Sandbox's Pod is controlled by it, attached
// (checkAttachedPod), and its turn names the Sandbox as the Pod's owner.
func checkSandboxPod(t *testing.T, sb *unstructured.Unstructured, pod *corev1.Pod) {
	t.Helper()
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "Sandbox" || ref.UID != sb.GetUID() {
		t.Errorf("pod %s: controller %+v, want Sandbox %s", pod.Name, ref, sb.GetName())
	}
	checkAttachedPod(t, pod)
	turn, err := env.dyn.Resource(agentTurnGVR).Namespace(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		return // checkAttachedPod said so
	}
	if got := str(turn, "spec", "podRef", "owner"); got != "Sandbox/"+sb.GetName() {
		t.Errorf("turn %s: spec.podRef.owner %q, want Sandbox/%s", turn.GetName(), got, sb.GetName())
	}
	t.Logf("turn %s of pod UID %s: attempt %d, %s", turn.GetName(), pod.UID, num(turn, "spec", "attempt"), str(turn, "status", "outcome"))
}

// attachNamespace makes the test's namespace, labels it for attach and
// waits for the manager's ConfigMap turnwatch-attach (the admission
// policy's parameters: without it, Pods are created without a sidecar).
func attachNamespace(t *testing.T, suffix string) string {
	t.Helper()
	ns := policyNamespace(t, suffix)
	if _, err := kubectl("label", "namespace", ns, "turnwatch.dev/attach=enabled"); err != nil {
		t.Fatal(err)
	}
	err := waitFor(context.Background(), time.Minute, "the namespace ready for attach", func() (bool, error) {
		_, err := env.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "turnwatch-attach", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// waitPodEnded waits for the Pod name (not the one of UID notUID, which
// may still be going) to end, Failed or Succeeded, and for its AgentTurn
// (the turn of its name and UID) to have an outcome.
func waitPodEnded(t *testing.T, ns, name string, notUID types.UID) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pod *corev1.Pod
	err := waitFor(ctx, 5*time.Minute, "pod "+name+" ended and recorded", func() (bool, error) {
		p, err := env.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.UID == notUID || (p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded) {
			return false, nil
		}
		pod = p
		turn, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && str(turn, "spec", "podRef", "uid") == string(p.UID) && str(turn, "status", "outcome") != "", nil
	})
	if err != nil {
		table, _ := kubectl("-n", ns, "get", "sandboxes,pods,agentturns", "-o", "wide")
		t.Fatalf("%v\n%s\n%s", err, table, describeIn(ns, "pod", name))
	}
	return pod
}

// logSandboxAfter logs what followed the failed Pod: the Sandbox's
// conditions once its controller saw the Pod end (the pinned version marks
// it Ready False and Finished True, both PodFailed: test/internal/agentsandbox
// proves it on envtest), whether it made another Pod (it keeps the failed
// one), and its log about the Sandbox. It asserts nothing.
func logSandboxAfter(t *testing.T, ns, name string, failed *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	var sb *unstructured.Unstructured
	_ = waitFor(ctx, time.Minute, "the Sandbox's Finished condition", func() (bool, error) {
		got, err := env.dyn.Resource(agentsandbox.SandboxGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		sb = got
		_, ok := agentsandbox.Condition(got, "Finished")
		return ok, nil
	})
	time.Sleep(5 * time.Second) // time enough for another Pod, if the controller made one
	t.Logf("the Sandbox %s after its Pod failed:\n%s", name, agentsandbox.Conditions(sb))
	var pods []string
	if list, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			which := "another Pod"
			if p.UID == failed.UID {
				which = "the failed Pod"
			}
			pods = append(pods, fmt.Sprintf("%s (%s, %s)", p.Name, p.Status.Phase, which))
		}
	}
	t.Logf("pods in %s after the failure: %s", ns, strings.Join(pods, "; "))
	table, _ := kubectl("-n", ns, "get", "sandboxes,pods,agentturns", "-o", "wide")
	t.Logf("kubectl get sandboxes,pods,agentturns:\n%s", table)
	if out, err := os.ReadFile(agentSandbox.ctrl.Log); err == nil {
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, `"`+name+`"`) || strings.Contains(l, "/"+name) {
				lines = append(lines, l)
			}
		}
		t.Logf("the agent-sandbox controller about %s (%d lines, the last 20):\n%s", name, len(lines), tail(strings.Join(lines, "\n"), 20))
	}
}
