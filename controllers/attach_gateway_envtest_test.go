package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// attachGatewayNamespace is attachNamespace with a model gateway in its
// parameters, required when required names a policy.
func attachGatewayNamespace(t *testing.T, gw render.AttachGateway) string {
	t.Helper()
	ns := newNamespace(t)
	setAttachLabel(t, ns, twv1.AttachEnabled)
	for _, obj := range agentturn.AttachRBAC(ns, nil)[:1] {
		create(t, obj)
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: twv1.AttachParams, Namespace: ns},
		Data: render.AttachParams(attachOptions(), render.AttachNamespace{Guards: []byte(`{}`), Limits: []byte(`{}`), Gateway: gw})})
	return ns
}

// createInjected creates p once the attach policy is in force (its
// sidecar injected), and returns it as created.
func createInjected(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	eventually(t, "pod "+p.Name+" injected", func() error {
		q := p.DeepCopy()
		if err := k8s.Create(context.Background(), q); err != nil {
			return err
		}
		if !hasSidecar(q) {
			_ = k8s.Delete(context.Background(), q, client.GracePeriodSeconds(0))
			return fmt.Errorf("created without a sidecar")
		}
		p = q
		return nil
	})
	return p
}

var attachedGateway = &twv1.ModelGateway{Upstream: "https://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "model-key", Key: "key"}}

// TestAttachWiresTheGateway: where the namespace has a model gateway,
// turnwatch-attach points an attached agent at its sidecar as RenderPod
// points a run's turn at it, on a real API server: the agent's env (its own
// key, a valueFrom, replaced by the placeholder; its other env kept), the
// sidecar's env, mounts and probe, and the key's volume are a turn's, for
// the same template, port and token. A host-network Pod's sidecar declares
// the port as a host port; an agent container without env gets one; a Pod
// labelled auto is injected without the gateway.
func TestAttachWiresTheGateway(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	const token = "turnwatch-placeholder-test"
	ns := attachGatewayNamespace(t, render.AttachGateway{Gateway: attachedGateway, Token: token})
	agent := corev1.Container{Name: "agent", Image: "agent:test", Env: []corev1.EnvVar{
		{Name: "WORKDIR", Value: "/workspace"},
		{Name: "ANTHROPIC_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "own"}, Key: "key"}}},
	}}

	// A run's turn Pod of the same template, port and token.
	o := attachOptions()
	o.ModelPort, o.ModelToken = render.AttachModelPort, token
	run := newRun(ns, "same", func(r *twv1.AgentRun) {
		r.Spec.Format = twv1.FormatClaude
		r.Spec.Model = &twv1.Model{Gateway: attachedGateway}
		r.Spec.Template.Spec.Containers = []corev1.Container{agent}
	})
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "same-0", Namespace: ns}, Spec: twv1.AgentTurnSpec{RunName: "same"}}
	rendered, err := render.RenderPod(run, turn, o)
	if err != nil {
		t.Fatal(err)
	}
	create(t, rendered) // defaulted by the same server

	pod := watchedPod(ns, "job-gw", map[string]string{twv1.LabelWatch: "claude"})
	pod.Spec.Containers = []corev1.Container{agent}
	pod = createInjected(t, pod)
	// The turn's agent env but what its run tells the agent.
	var wantA []corev1.EnvVar
	for _, e := range rendered.Spec.Containers[0].Env {
		if !strings.HasPrefix(e.Name, "TURNWATCH_") {
			wantA = append(wantA, e)
		}
	}
	if gotA := pod.Spec.Containers[0].Env; !equality.Semantic.DeepEqual(gotA, wantA) {
		t.Errorf("the attached agent's env differs from a turn's:\n got %+v\nwant %+v", gotA, wantA)
	}
	gotS, wantS := pod.Spec.InitContainers[0], rendered.Spec.InitContainers[0]
	gotEnv, wantEnv := fixtureEnv(gotS), fixtureEnv(wantS)
	for _, name := range []string{protocol.EnvModelPort, protocol.EnvModelToken, protocol.EnvModelUpstream, protocol.EnvModelKeyFile} {
		if gotEnv[name] != wantEnv[name] {
			t.Errorf("sidecar %s = %q, want %q as in a turn's Pod", name, gotEnv[name], wantEnv[name])
		}
	}
	if gotEnv[protocol.EnvModelHold] != "true" {
		t.Errorf("sidecar %s = %q: an attached Pod's refusals are to be held", protocol.EnvModelHold, gotEnv[protocol.EnvModelHold])
	}
	if !equality.Semantic.DeepEqual(gotS.VolumeMounts, wantS.VolumeMounts) || !equality.Semantic.DeepEqual(gotS.StartupProbe, wantS.StartupProbe) {
		t.Errorf("sidecar mounts %+v probe %+v, want %+v %+v", gotS.VolumeMounts, gotS.StartupProbe, wantS.VolumeMounts, wantS.StartupProbe)
	}
	if got, want := volumeOf(pod, render.ModelKeyVolume), volumeOf(rendered, render.ModelKeyVolume); want == nil || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("key volume %+v, want %+v", got, want)
	}
	if pod.Labels[twv1.LabelModelPort] != rendered.Labels[twv1.LabelModelPort] || len(gotS.Ports) != 0 {
		t.Errorf("label %q ports %v, want %q and none", pod.Labels[twv1.LabelModelPort], gotS.Ports, rendered.Labels[twv1.LabelModelPort])
	}

	host := watchedPod(ns, "host", map[string]string{twv1.LabelWatch: "codex"})
	host.Spec.HostNetwork = true
	host = createInjected(t, host)
	if p := host.Spec.InitContainers[0].Ports; len(p) != 1 || p[0].HostPort != render.AttachModelPort || p[0].ContainerPort != render.AttachModelPort {
		t.Errorf("host-network sidecar's ports %+v: want %d as a host port", p, render.AttachModelPort)
	}
	if env := envOf(host.Spec.Containers[0]); env["OPENAI_BASE_URL"] != fmt.Sprintf("http://127.0.0.1:%d/v1", render.AttachModelPort) || env["CODEX_API_KEY"] != token {
		t.Errorf("an agent without env got %v", env)
	}

	auto := createInjected(t, watchedPod(ns, "auto", map[string]string{twv1.LabelWatch: "auto"}))
	if env := fixtureEnv(auto.Spec.InitContainers[0]); env[protocol.EnvModelPort] != "" || len(auto.Spec.Containers[0].Env) != 0 {
		t.Errorf("a Pod labelled auto was pointed at the gateway: sidecar %v, agent %v", env, auto.Spec.Containers[0].Env)
	}
}

// TestAttachRequiresTheGateway: where a policy requires the gateway,
// turnwatch-attach-gateway refuses, naming why, an attached Pod that the
// gateway cannot serve or that holds a key of its own in another container;
// the agent's own key is no reason, turnwatch-attach replaced it.
func TestAttachRequiresTheGateway(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const policy = "TurnPolicy/keys"
	ns := attachGatewayNamespace(t, render.AttachGateway{Gateway: attachedGateway, Required: policy, Token: "turnwatch-placeholder-req"})
	keyed := watchedPod(ns, "keyed", map[string]string{twv1.LabelWatch: "gemini"})
	keyed.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GEMINI_API_KEY", Value: "own"}}
	createInjected(t, keyed) // the policies in force from here

	helper := watchedPod(ns, "helper", map[string]string{twv1.LabelWatch: "gemini"})
	helper.Spec.Containers = append(helper.Spec.Containers, corev1.Container{Name: "tools", Image: "tools:test",
		Env: []corev1.EnvVar{{Name: "OPENAI_API_KEY", Value: "sk-own"}}})
	agentLabel := watchedPod(ns, "named", map[string]string{twv1.LabelWatch: "claude", twv1.LabelAgentContainer: "main"})
	tests := []struct {
		pod   *corev1.Pod
		parts []string
	}{
		{watchedPod(ns, "auto", map[string]string{twv1.LabelWatch: "auto"}),
			[]string{"metadata.labels[turnwatch.dev/watch]: auto names no CLI", policy + " requires the gateway"}},
		{helper, []string{"a container holds a model key of its own", "spec.containers[tools].env: OPENAI_API_KEY"}},
		{agentLabel, []string{"metadata.labels[turnwatch.dev/agent-container]: main names no container"}},
	}
	for _, tt := range tests {
		err := k8s.Create(ctx, tt.pod)
		if err == nil {
			t.Errorf("%s: created", tt.pod.Name)
			continue
		}
		if e := containsAll(err.Error(), tt.parts...); e != nil {
			t.Errorf("%s: %v", tt.pod.Name, e)
		}
	}

	none := attachGatewayNamespace(t, render.AttachGateway{Required: policy})
	eventually(t, "a Pod where no policy gives the gateway refused", func() error {
		p := watchedPod(none, "no-gateway", map[string]string{twv1.LabelWatch: "pi"})
		if err := k8s.Create(ctx, p); err == nil {
			_ = k8s.Delete(ctx, p, client.GracePeriodSeconds(0))
			return fmt.Errorf("created")
		} else {
			return containsAll(err.Error(), policy+" requires the model gateway", "no policy of the namespace gives one")
		}
	})
}

// TestAttachDeliversNudges: where the namespace's guards deliver nudges to
// the agent (nudgeDelivery: file), turnwatch-attach shares the nudges
// volume between the sidecar and the agent container as RenderPod does for
// a run with those guards: the volume, both containers' mounts and env, and
// the sidecar's startup probe.
func TestAttachDeliversNudges(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	const guards = `{"nudgeDelivery":"file","refuseWait":"3s"}`
	o := attachOptions()
	ns := attachNamespace(t, o, guards)
	run := newRun(ns, "same", func(r *twv1.AgentRun) {
		r.Spec.Format = twv1.FormatClaude
		r.Spec.Guards = &twv1.Guards{NudgeDelivery: ptr.To("file"), RefuseWait: ptr.To("3s")}
	})
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "same-0", Namespace: ns}, Spec: twv1.AgentTurnSpec{RunName: "same"}}
	rendered, err := render.RenderPod(run, turn, o)
	if err != nil {
		t.Fatal(err)
	}
	create(t, rendered)
	pod := createInjected(t, watchedPod(ns, "nudged", map[string]string{twv1.LabelWatch: "claude"}))

	gotS, wantS := pod.Spec.InitContainers[0], rendered.Spec.InitContainers[0]
	if !equality.Semantic.DeepEqual(gotS.VolumeMounts, wantS.VolumeMounts) || !equality.Semantic.DeepEqual(gotS.StartupProbe, wantS.StartupProbe) {
		t.Errorf("sidecar mounts %+v probe %+v, want %+v %+v", gotS.VolumeMounts, gotS.StartupProbe, wantS.VolumeMounts, wantS.StartupProbe)
	}
	if got, want := fixtureEnv(gotS)[nudgefile.EnvDir], fixtureEnv(wantS)[nudgefile.EnvDir]; got != want || want == "" {
		t.Errorf("sidecar %s = %q, want %q", nudgefile.EnvDir, got, want)
	}
	gotA, wantA := pod.Spec.Containers[0], rendered.Spec.Containers[0]
	if !equality.Semantic.DeepEqual(gotA.VolumeMounts, wantA.VolumeMounts) {
		t.Errorf("agent mounts %+v, want %+v", gotA.VolumeMounts, wantA.VolumeMounts)
	}
	for _, name := range []string{nudgefile.EnvDir, nudgefile.EnvRefuseWait} {
		if got, want := envOf(gotA)[name], envOf(wantA)[name]; got != want || want == "" {
			t.Errorf("agent %s = %q, want %q", name, got, want)
		}
	}
	if got, want := volumeOf(pod, nudgefile.Volume), volumeOf(rendered, nudgefile.Volume); want == nil || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("nudges volume %+v, want %+v", got, want)
	}
}
