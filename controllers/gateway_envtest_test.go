package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The model gateway's policies on a real API server (docs/gateway.md):
// where a TurnPolicy or ClusterTurnPolicy requires the gateway, a run
// whose template sets a model key itself is refused at apply naming the
// env var, its container and the policy (turnwatch-agentrun-gateway,
// turnwatch-agentrun-cluster-gateway); the controller refuses the same at
// render, and a run that ends up without a gateway; a run that gets one
// has its key in the sidecar only.

// testGateway is a gateway whose key is the Secret llm's key api-key.
func testGateway() *twv1.ModelGateway {
	return &twv1.ModelGateway{Upstream: "https://llm.example/anthropic", KeySecretRef: twv1.SecretKeyRef{Name: "llm", Key: "api-key"}}
}

// keyedRun is a run whose container sets env name.
func keyedRun(ns, container, name string, init bool) *twv1.AgentRun {
	return newRun(ns, "keyed-"+rand.String(6), func(r *twv1.AgentRun) {
		c := corev1.Container{Name: container, Image: "x", Env: []corev1.EnvVar{{Name: "HOME", Value: "/h"},
			{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "api-key"}}}}}
		if init {
			r.Spec.Template.Spec.InitContainers = append(r.Spec.Template.Spec.InitContainers, c)
		} else {
			r.Spec.Template.Spec.Containers = append(r.Spec.Template.Spec.Containers, c)
		}
		r.Spec.Model = &twv1.Model{Gateway: testGateway()}
	})
}

// judgeKeyed dry-runs run: nil when it is refused naming every want.
func judgeKeyed(run *twv1.AgentRun, want ...string) error {
	err := k8s.Create(context.Background(), run, client.DryRunAll)
	if err == nil {
		return errors.New("admitted")
	}
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("want Invalid, got %w", err)
	}
	return containsAll(err.Error(), want...)
}

func TestGatewayRequiredAtAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	before := keyedRun(ns, "agent2", "OPENAI_API_KEY", false)
	create(t, before) // made before the policy: admitted
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "metered", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Model: &twv1.ModelPolicy{RequireGateway: true}}})
	eventually(t, "the requirement to hold in "+ns, func() error {
		return judgeKeyed(keyedRun(ns, "agent2", "ANTHROPIC_API_KEY", false), "turnwatch-agentrun-gateway", "TurnPolicy/metered",
			"spec.template.spec.containers[agent2].env: ANTHROPIC_API_KEY", "spec.model.requireGateway")
	})
	if err := judgeKeyed(keyedRun(ns, "setup", "GEMINI_API_KEY", true), "spec.template.spec.initContainers[setup].env: GEMINI_API_KEY"); err != nil {
		t.Errorf("an init container's key: %v", err)
	}
	// A run without a key is admitted, with a gateway or without one (a
	// policy may give the default: the controller judges that at render).
	for _, model := range []*twv1.Model{{Gateway: testGateway()}, nil} {
		if err := k8s.Create(ctx, newRun(ns, "clean-"+rand.String(6), func(r *twv1.AgentRun) { r.Spec.Model = model }), client.DryRunAll); err != nil {
			t.Errorf("a run that sets no key (gateway %v): %v", model != nil, err)
		}
	}
	// The run made before the policy takes label patches; a template
	// change is judged.
	if err := k8s.Patch(ctx, before.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
		t.Errorf("a label patch of a run made before the policy: %v", err)
	}
	err := k8s.Patch(ctx, before.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"template":{"metadata":{"labels":{"x":"y"}}}}}`)))
	if containsAll(fmt.Sprint(err), "turnwatch-agentrun-gateway", "spec.template.spec.containers[agent2].env: OPENAI_API_KEY") != nil {
		t.Errorf("a template change of a run made before the policy: %v", err)
	}

	// A ClusterTurnPolicy: in the namespaces it selects, and only there.
	id := rand.String(8)
	const own = "gateway.turnwatch.dev/test"
	selected, unselected := labelledNamespace(t, map[string]string{own: id}), labelledNamespace(t, map[string]string{own: "no"})
	pol := &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "metered-" + id}}
	pol.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{own: id}}
	pol.Spec.Model = &twv1.ModelPolicy{RequireGateway: true}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	eventually(t, "the cluster policy to hold", func() error {
		return judgeKeyed(keyedRun(selected, "agent2", "CODEX_API_KEY", false), "turnwatch-agentrun-cluster-gateway", "ClusterTurnPolicy/"+pol.Name,
			"spec.template.spec.containers[agent2].env: CODEX_API_KEY")
	})
	if err := k8s.Create(ctx, keyedRun(unselected, "agent2", "CODEX_API_KEY", false), client.DryRunAll); err != nil {
		t.Errorf("a namespace the cluster policy does not select: %v", err)
	}
}

// The controller holds the same line at render (a run admitted before the
// policy), and refuses a run that ends up without a gateway; a run that
// gets the policy's default gateway runs with its key in the sidecar only,
// and its sidecar is told what the namespace's budget has left.
func TestGatewayAtRender(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	noRerolls := func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} }
	keyed := keyedRun(ns, "agent2", "ANTHROPIC_AUTH_TOKEN", false)
	keyed.Name = "keyed"
	noRerolls(keyed)
	create(t, keyed)
	create(t, newRun(ns, "bare", noRerolls))
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "metered", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Model: &twv1.ModelPolicy{RequireGateway: true},
			Budget: &twv1.Budget{MaxCostUSD: "25", Window: "24h"}}})
	startManager(t, ns, managerOpts{})
	for run, want := range map[string][]string{
		"keyed": {"TurnPolicy/metered's spec.model.requireGateway", "spec.template.spec.containers[agent2].env: ANTHROPIC_AUTH_TOKEN"},
		"bare":  {"TurnPolicy/metered's spec.model.requireGateway", "spec.model.gateway: unset"},
	} {
		turn := turnSettled(t, ns, run+"-0")
		if turn.Status.Outcome != twv1.TurnFailed || turn.Status.Error == nil || turn.Status.Error.Type != twv1.ClassInfra {
			t.Errorf("turn %s: %s %+v, want Failed as infra", turn.Name, turn.Status.Outcome, turn.Status.Error)
			continue
		}
		if err := containsAll(turn.Status.Error.Message, want...); err != nil {
			t.Errorf("turn %s: %v", turn.Name, err)
		}
		if _, err := getPod(ns, run+"-0"); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s-0: %v, want none", run, err)
		}
	}

	// A second policy gives the default: the next run gets it.
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gateway", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Model: &twv1.ModelPolicy{Gateway: testGateway()}}})
	create(t, newRun(ns, "metered"))
	pod := waitPod(t, ns, "metered-0")
	checkKeyInSidecarOnly(t, pod)
	sc := envOf(pod.Spec.InitContainers[0])
	if left, err := monitor.ParseMoney(sc[protocol.EnvBudgetLeftUSD]); err != nil || left != usd("25") {
		t.Errorf("%s = %q, want 25", protocol.EnvBudgetLeftUSD, sc[protocol.EnvBudgetLeftUSD])
	}
}

// checkKeyInSidecarOnly: the agent's key env holds the placeholder the
// sidecar checks, its endpoint is the sidecar's, and the Secret is a volume
// only the sidecar mounts; nothing of the Pod that `kubectl describe`
// shows holds more than the Secret's name.
func checkKeyInSidecarOnly(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	agent, sc := envOf(pod.Spec.Containers[0]), envOf(pod.Spec.InitContainers[0])
	port := pod.Labels[twv1.LabelModelPort]
	if port == "" || agent["ANTHROPIC_BASE_URL"] != "http://127.0.0.1:"+port || sc[protocol.EnvModelPort] != port {
		t.Errorf("endpoint %q, sidecar port %q, label %q", agent["ANTHROPIC_BASE_URL"], sc[protocol.EnvModelPort], port)
	}
	if tok := agent["ANTHROPIC_API_KEY"]; !strings.HasPrefix(tok, "turnwatch-placeholder-") || tok != sc[protocol.EnvModelToken] || strings.Contains(tok, string(pod.OwnerReferences[0].UID)) {
		t.Errorf("agent key %q, sidecar token %q", tok, sc[protocol.EnvModelToken])
	}
	if sc[protocol.EnvModelUpstream] != "https://llm.example/anthropic" || sc[protocol.EnvModelKeyFile] == "" {
		t.Errorf("sidecar upstream %q key file %q", sc[protocol.EnvModelUpstream], sc[protocol.EnvModelKeyFile])
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.Name == render.ModelKeyVolume && c.Name != protocol.SidecarContainerName {
				t.Errorf("container %s mounts the key", c.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("container %s: env %s reads a Secret", c.Name, e.Name)
			}
		}
	}
}

// agentRunningStatus is the kubelet reporting the agent container running.
func agentRunningStatus(s *corev1.PodStatus) {
	s.Phase = corev1.PodRunning
	s.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "agent:test",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
}

// After a trip on a Pod that serves its model, the controller leaves the
// running agent agentturn.ModelTripGrace to end by itself: one that does is
// settled with no stop of its Pod and an AgentEnded Event; one that does
// not is stopped after the grace, with an AgentStopped Event.
func TestTripGraceForModel(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	for _, name := range []string{"ends", "hangs"} {
		create(t, newRun(ns, name, func(r *twv1.AgentRun) {
			r.Spec.Model = &twv1.Model{Gateway: testGateway()}
			r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)}
		}))
		waitPod(t, ns, name+"-0")
		playSidecar(t, ns, name+"-0", agentRunningStatus)
		playSidecar(t, ns, name+"-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	}
	tripped := time.Now()
	// Within the grace, neither turn settles nor is stopped.
	time.Sleep(agentturn.ModelTripGrace / 3)
	for _, name := range []string{"ends", "hangs"} {
		turn, err := getTurn(ns, name+"-0")
		pod, perr := getPod(ns, name+"-0")
		if err != nil || perr != nil || turn.Status.Outcome != "" || pod.Spec.ActiveDeadlineSeconds != nil {
			t.Errorf("%s within the grace: outcome %q, pod deadline %v (%v %v)", name, turn.Status.Outcome, pod.Spec.ActiveDeadlineSeconds, err, perr)
		}
	}
	playSidecar(t, ns, "ends-0", agentExited(1, "Error", corev1.PodRunning))
	if turn := turnSettled(t, ns, "ends-0"); turn.Status.Error == nil || turn.Status.Error.Detector != monitor.DetectorIdenticalCalls {
		t.Errorf("ends: %+v", turn.Status.Error)
	}
	waitEvents(t, ns, "ends", agentturn.EventAgentEnded, 1)
	turn := turnSettled(t, ns, "hangs-0")
	// Whole seconds on both ends: the trip condition's time (whence the
	// grace) and the completion time are each up to 1 s before the fact,
	// and tripped was read a moment after the trip.
	if waited := turn.Status.CompletionTime.Sub(tripped); waited < agentturn.ModelTripGrace-2500*time.Millisecond {
		t.Errorf("hangs settled %s after the trip, before the grace", waited)
	}
	if pod, err := getPod(ns, "hangs-0"); err != nil || pod.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("hangs: the pod was not stopped (%v)", err)
	}
	waitEvents(t, ns, "hangs", agentturn.EventAgentStopped, 1)
	if evs, _ := runEvents(ns, "hangs", agentturn.EventAgentEnded); len(evs) != 0 {
		t.Errorf("hangs: %d AgentEnded events", len(evs))
	}
}
