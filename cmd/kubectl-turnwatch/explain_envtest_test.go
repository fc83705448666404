package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// explain runs `kubectl turnwatch explain` with args against the cluster.
func (k drillCluster) explain(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append(append([]string{"explain"}, args...), "--kubeconfig", k.kubeconfig), &out, &errOut)
	return code, out.String(), errOut.String()
}

// labelledNamespace makes a namespace with labels.
func (k drillCluster) labelledNamespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	if err := k.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// agentPod makes a Pod with labels and, when controller names an
// AgentTurn, that turn as its controller.
func (k drillCluster) agentPod(t *testing.T, ns, name string, labels map[string]string, controller *twv1.AgentTurn) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
	if controller != nil {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: twv1.GroupVersion.String(), Kind: "AgentTurn",
			Name: controller.Name, UID: controller.UID, Controller: &yes}}
	}
	if err := k.c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// sidecarPod makes a Pod with labels, injected with turnwatch's sidecar as
// attach injects it (a native sidecar: an init container).
func (k drillCluster) sidecarPod(t *testing.T, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: protocol.SidecarContainerName, Image: "sidecar", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "agent", Image: "agent"}}}}
	if err := k.c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// turn makes an AgentTurn and writes its status.
func (k drillCluster) turn(t *testing.T, at *twv1.AgentTurn, status twv1.AgentTurnStatus) *twv1.AgentTurn {
	t.Helper()
	at.Spec.Prompt, at.Spec.ConversationID = "hi", "c0ffee00-0000-4000-8000-000000000000"
	if err := k.c.Create(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	at.Status = status
	if err := k.c.Status().Update(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	return at
}

// faulted is the status of a turn that identicalCalls tripped.
func faulted(conds ...metav1.Condition) twv1.AgentTurnStatus {
	st := twv1.AgentTurnStatus{Outcome: twv1.TurnFailed, Steps: 4, CostUSD: "0.12",
		Error: &twv1.TurnError{Type: "runaway", Detector: "identicalCalls", Message: "repeated an identical tool call 4 times"}}
	for _, c := range conds {
		c.LastTransitionTime = metav1.Now()
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// TestExplainPodCluster explains Pods against a real API server: an
// attached Pod's turn (spec.podRef of its UID), a run's turn Pod as its
// run, an attached Pod that is gone as its turn, and each Pod that has no
// turn with what it lacks.
func TestExplainPodCluster(t *testing.T) {
	k := startDrillCluster(t)
	ctx := context.Background()
	team := k.labelledNamespace(t, "team", map[string]string{twv1.LabelAttach: twv1.AttachEnabled})
	plain := k.labelledNamespace(t, "plain", nil)
	watch := map[string]string{twv1.LabelWatch: "claude"}

	nightly := k.agentPod(t, team, "nightly-x7k2p", watch, nil)
	k.turn(t, &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: nightly.Name}, Spec: twv1.AgentTurnSpec{
		PodRef: &twv1.AttachedPod{Name: nightly.Name, UID: string(nightly.UID), Format: twv1.FormatClaude, AgentContainer: "agent", Owner: "Job/nightly"},
		Guards: []twv1.GuardSetting{{Name: "identicalCalls", Value: "4", Source: "default"}},
	}}, faulted(metav1.Condition{Type: twv1.TurnConditionForgeable, Status: metav1.ConditionTrue, Reason: twv1.TurnConditionForgeable,
		Message: "container agent mounts kube-api-access-abcde"}))
	code, out, errOut := k.explain("pod/"+nightly.Name, "-n", team)
	for _, want := range []string{
		"Pod team/nightly-x7k2p (attached, owner Job/nightly): Failed (runaway, identicalCalls): repeated an identical tool call 4 times in turn nightly-x7k2p\n" +
			"format claude, agent container agent\n",
		"Forgeable: container agent mounts kube-api-access-abcde",
		// The Pod has no sidecar: the stream is read as the turn's format.
		// (envtest's API server serves an empty log for a Pod on no node.)
		"turn nightly-x7k2p, its agent's stream:\nstream: claude, 0 lines",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("attached Pod: exit %d, stdout lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	code, out, _ = k.explain("pods/"+nightly.Name, "-n", team, "-o", "json")
	var r explain.Run
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Attached == nil || r.Attached.Owner != "Job/nightly" ||
		len(r.Turns) != 1 || r.Turns[0].Detector != "identicalCalls" {
		t.Errorf("-o json: exit %d %v:\n%s", code, err, out)
	}

	// A run's turn Pod is its run, with that turn's stream.
	run := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "r"}, Spec: twv1.AgentRunSpec{
		Format: twv1.FormatPi, Prompt: "hi", Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}}}}}}
	if err := k.c.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"r-0", "r-1"} {
		at := k.turn(t, &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name, Labels: map[string]string{twv1.LabelRun: "r"}},
			Spec: twv1.AgentTurnSpec{RunName: "r", Attempt: int32(i)}}, faulted())
		k.agentPod(t, team, name, map[string]string{twv1.LabelRun: "r"}, at)
	}
	code, out, errOut = k.explain("pod/r-0", "-n", team)
	if code != 0 || !strings.HasPrefix(out, "AgentRun team/r: ") || !strings.Contains(out, "turn r-0, its agent's stream:\nstream: pi, 0 lines") {
		t.Errorf("a run's Pod: exit %d:\n%s%s", code, out, errOut)
	}

	// A run's turn Pod that is gone is its run, with that turn.
	var r1 corev1.Pod
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: team, Name: "r-1"}, &r1); err != nil {
		t.Fatal(err)
	}
	if err := k.c.Delete(ctx, &r1); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = k.explain("pod/r-1", "-n", team)
	if code != 0 || !strings.HasPrefix(out, "AgentRun team/r: ") || !strings.Contains(out, "turn r-1: no stream to show: its Pod r-1: pods \"r-1\" not found") {
		t.Errorf("a run's gone Pod: exit %d:\n%s%s", code, out, errOut)
	}

	// A Pod has one turn: --turn is refused, with where to pick another.
	for _, tt := range []struct{ pod, want string }{
		{"r-0", "--turn: Pod team/r-0 is one turn's (r-0); explain the run, r, to pick another"},
		{nightly.Name, "--turn: an attached Pod has one turn, its own"},
	} {
		if code, _, errOut := k.explain("pod/"+tt.pod, "-n", team, "--turn", "1"); code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("pod/%s --turn 1: exit %d, stderr %q, want %q", tt.pod, code, errOut, tt.want)
		}
	}

	// An attached Pod that is gone is explained from its turn.
	if err := k.c.Delete(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = k.explain("pod/"+nightly.Name, "-n", team)
	if code != 0 || !strings.Contains(out, "turn nightly-x7k2p: no stream to show: its Pod nightly-x7k2p: pods \"nightly-x7k2p\" not found") {
		t.Errorf("a gone Pod: exit %d:\n%s%s", code, out, errOut)
	}

	// A Pod of the name made later is not the turn's Pod: it is not recorded yet.
	k.agentPod(t, team, nightly.Name, watch, nil)
	unwatched := k.agentPod(t, team, "build", nil, nil)
	outside := k.agentPod(t, plain, "agent", watch, nil)
	bare := k.agentPod(t, team, "bare", watch, nil)
	waiting := k.sidecarPod(t, team, "waiting", watch)
	for _, tt := range []struct {
		name, ns, pod, want string
	}{
		{"not labelled", team, unwatched.Name, "Pod team/build has no turn: it is not labelled turnwatch.dev/watch"},
		{"namespace not labelled", plain, outside.Name, "Pod plain/agent has no turn: its namespace plain is not labelled turnwatch.dev/attach=enabled"},
		{"no sidecar", team, bare.Name, "Pod team/bare has no turn: it has no sidecar (turnwatch-sidecar): it was created before its namespace was labelled"},
		{"not recorded", team, waiting.Name, "Pod team/waiting has no turn: it is labelled turnwatch.dev/watch=claude and has its sidecar, but is not recorded yet"},
		{"a later Pod of the name", team, nightly.Name, "records an earlier Pod of that name, uid " + string(nightly.UID)},
		{"no Pod, no turn", team, "none", "Pod team/none not found, and no attached turn records it"},
	} {
		code, out, errOut := k.explain("pod/"+tt.pod, "-n", tt.ns)
		if code != 1 || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, want %q", tt.name, code, out, errOut, tt.want)
		}
	}
}
