//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The e2e manager's start and exit timeouts: short, so that a turn that
// cannot start or does not end is told in seconds, and long enough for
// every other test's Pods to start on a busy node.
const (
	e2eStartTimeout = 90 * time.Second
	e2eExitGrace    = 15 * time.Second
	// resultQuiet is the sidecar's wait after a result before it writes
	// turnwatch.dev/Result (sidecar/result.go).
	resultQuiet = 5 * time.Second
	// e2eStatusFreshness is the e2e manager's statusFreshness: the sidecar
	// reports progress into its run every 15 s (the first a period after it
	// starts), so turns of the suite's length report while they run.
	e2eStatusFreshness = 20 * time.Second
)

// writeManagerConfig writes the e2e manager's cluster config (--config).
// TURNWATCH_E2E_MANAGER_ARGS come after it, so a --config there wins.
func writeManagerConfig() (string, error) {
	path := filepath.Join(env.artifacts, "manager-config.yaml")
	body := "# written by test/e2e/start_test.go\n" +
		"startTimeout: " + e2eStartTimeout.String() + "\n" +
		"exitGrace: " + e2eExitGrace.String() + "\n" +
		"statusFreshness: " + e2eStatusFreshness.String() + "\n"
	return path, os.WriteFile(path, []byte(body), 0o644)
}

// withArgs appends args to the agent container's arguments.
func withArgs(obj *unstructured.Unstructured, args ...string) {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	for _, a := range args {
		c["args"] = append(c["args"].([]any), a)
	}
	_ = unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
}

func createObj(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(env.ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create AgentRun %s: %v", obj.GetName(), err)
	}
}

// An agent that prints its final result and then hangs: the turn is
// Succeeded exitGrace after the result, its Pod stopped and the kubelet
// ends it, with an Event saying why.
func TestResultThenHang(t *testing.T) {
	needOperator(t)
	t.Parallel()
	const name = "result-hang"
	obj := agentRun(name, runSpec{scenario: "healthy", format: "claude", speed: 4})
	withArgs(obj, "--hold")
	createObj(t, obj)
	start := time.Now()
	run := waitRun(t, name, 3*time.Minute)
	took := time.Since(start)
	if phase := str(run, "status", "phase"); phase != "Succeeded" {
		t.Fatalf("phase %s, want Succeeded\n%s", phase, debugRun(name))
	}
	turns := turnsOf(name)
	if len(turns) != 1 {
		t.Fatalf("turns %s, want one", fmtTurns(turns))
	}
	pod, ok := podOfTurn(name, turns[0])
	if !ok {
		t.Fatalf("no pod\n%s", debugRun(name))
	}
	res, ok := podCondition(pod, protocol.ConditionResult)
	if !ok {
		t.Fatalf("the sidecar wrote no %s condition\n%s", protocol.ConditionResult, debugRun(name))
	}
	done, err := time.Parse(time.RFC3339, str(turns[0], "status", "completionTime"))
	if err != nil {
		t.Fatal(err)
	}
	// Seconds on both sides: the condition's time is truncated to them.
	if wait := done.Sub(res.LastTransitionTime.Time); wait < e2eExitGrace-time.Second || wait > e2eExitGrace+10*time.Second {
		t.Errorf("settled %v after the result, want about exitGrace (%v)", wait, e2eExitGrace)
	}
	env.report.add("result-then-hang: created to Succeeded (exitGrace "+e2eExitGrace.String()+")", took)
	err = waitFor(context.Background(), time.Minute, "the hung agent is stopped", func() (bool, error) {
		p, ok := podOf(pod.Name)
		if !ok {
			return false, nil
		}
		cs, ok := containerStatus(p, "agent")
		return p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds == 1 && ok && cs.State.Terminated != nil, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, debugRun(name))
	}
	if n, msgs := runEvents(name, "StoppedAfterResult"); n != 1 {
		t.Errorf("%d StoppedAfterResult events %v, want 1", n, msgs)
	}
}

// A Pod that no node takes fails the turn as infra after startTimeout,
// with the scheduler's reason.
func TestUnschedulablePod(t *testing.T) {
	needOperator(t)
	t.Parallel()
	const name = "nowhere"
	obj := agentRun(name, runSpec{scenario: "healthy", format: "claude", speed: 4, rerolls: ptr[int64](0)})
	_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"turnwatch.dev/e2e": "no-such-node"},
		"spec", "template", "spec", "nodeSelector")
	createObj(t, obj)
	start := time.Now()
	run := waitRun(t, name, e2eStartTimeout+time.Minute)
	took := time.Since(start)
	if phase, class := str(run, "status", "phase"), str(run, "status", "fault", "class"); phase != "Faulted" || class != "infra" {
		t.Fatalf("phase %s class %s, want Faulted infra\n%s", phase, class, debugRun(name))
	}
	msg := str(run, "status", "fault", "message")
	if miss, ok := containsAll(msg, "did not start within "+e2eStartTimeout.String(), "Unschedulable", "node(s) didn't match"); !ok {
		t.Errorf("fault message %q lacks %q", msg, miss)
	}
	if took < e2eStartTimeout-5*time.Second {
		t.Errorf("faulted after %v, before startTimeout (%v)", took, e2eStartTimeout)
	}
	env.report.add("unschedulable: created to Faulted (startTimeout "+e2eStartTimeout.String()+")", took)
	pod, ok := podOfTurn(name, turnsOf(name)[0])
	if !ok || pod.Status.Phase != corev1.PodPending {
		t.Errorf("pod %v", pod)
	}
}
