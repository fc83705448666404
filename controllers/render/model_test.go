package render

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// readCLISample reads config/samples/cli_<format>.yaml.
func readCLISample(t *testing.T, format string) *twv1.AgentRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "cli_"+format+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := &twv1.AgentRun{}
	if err := yaml.UnmarshalStrict(b, run); err != nil {
		t.Fatal(err)
	}
	run.Namespace = "ns"
	return run
}

// gatewayOf is a model gateway whose key is the Secret key k of "llm".
func gatewayOf(k string) *twv1.Model {
	return &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://llm.example/anthropic", KeySecretRef: twv1.SecretKeyRef{Name: "llm", Key: k}}}
}

// modelOptions are the options of a Pod that serves its model.
func modelOptions() RenderOptions {
	return RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, ModelPort: 20123, ModelToken: "turnwatch-placeholder-t"}
}

// A drill and a gateway of each CLI sample change the agent container's
// endpoint and key env and nothing else of it, in the same way: the
// endpoint is the sidecar's on loopback, the key the turn's placeholder.
// The sidecar is told the port and the token, and the drill's scenario or
// the gateway's upstream and key file; it waits for its model before the
// agent starts.
func TestRenderModelOfEachSample(t *testing.T) {
	for _, format := range agents.Formats() {
		t.Run(format, func(t *testing.T) {
			run := readCLISample(t, format)
			turn := &twv1.AgentTurn{}
			turn.Name, turn.Namespace = run.Name+"-0", "ns"
			turn.Spec = twv1.AgentTurnSpec{RunName: run.Name, Prompt: "p"}
			plain, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards})
			if err != nil {
				t.Fatal(err)
			}
			drillRun, gatewayRun := run.DeepCopy(), run.DeepCopy()
			drillRun.Spec.Drill = &twv1.Drill{Scenario: "cycle"}
			gatewayRun.Spec.Model = gatewayOf("api-key")
			drill, err := RenderPod(drillRun, turn, modelOptions())
			if err != nil {
				t.Fatal(err)
			}
			gateway, err := RenderPod(gatewayRun, turn, modelOptions())
			if err != nil {
				t.Fatal(err)
			}
			cli, _ := agents.Lookup(format)
			checkAgentPointed(t, plain.Spec.Containers[0], drill.Spec.Containers[0], cli.Endpoint)
			if !equality.Semantic.DeepEqual(drill.Spec.Containers, gateway.Spec.Containers) {
				t.Error("the drill's agent container and the gateway's differ")
			}
			if !equality.Semantic.DeepEqual(drill.Spec.Volumes, plain.Spec.Volumes) {
				t.Error("the drill changed the Pod's volumes")
			}
			sc := drill.Spec.InitContainers[0]
			if envOf(sc)[protocol.EnvDrillScenario] != "cycle" || envOf(sc)[protocol.EnvModelPort] != "20123" || sc.StartupProbe == nil {
				t.Errorf("sidecar: scenario %q port %q probe %v", envOf(sc)[protocol.EnvDrillScenario], envOf(sc)[protocol.EnvModelPort], sc.StartupProbe)
			}
			if !strings.Contains(envOf(sc)[protocol.EnvGuards], `"cycleRepeats":4`) {
				t.Errorf("the scenario's guards are not over the run's: %s", envOf(sc)[protocol.EnvGuards])
			}
			if drill.Labels[twv1.LabelDrill] != "cycle" || drill.Labels[twv1.LabelModelPort] != "20123" || gateway.Labels[twv1.LabelModelPort] != "20123" {
				t.Errorf("labels %v, %v", drill.Labels, gateway.Labels)
			}
			checkOnlyUpstreamDiffers(t, drill, gateway)
		})
	}
}

// checkAgentPointed says how the model's agent container differs from the
// plain one: its endpoint, and one key env replaced or added, to the token.
func checkAgentPointed(t *testing.T, plain, agent corev1.Container, ep agents.Endpoint) {
	t.Helper()
	changed := map[string]string{}
	for _, e := range agent.Env {
		if i := slices.IndexFunc(plain.Env, func(p corev1.EnvVar) bool { return p.Name == e.Name }); i < 0 || !equality.Semantic.DeepEqual(plain.Env[i], e) {
			changed[e.Name] = e.Value
		}
	}
	if got := changed[ep.Env]; got != "http://127.0.0.1:20123"+ep.Suffix {
		t.Errorf("%s = %q", ep.Env, got)
	}
	delete(changed, ep.Env)
	if len(changed) != 1 {
		t.Errorf("changed env %v, want the endpoint and one key", changed)
	}
	for k, v := range changed {
		if !slices.Contains(ep.Keys, k) || v != "turnwatch-placeholder-t" {
			t.Errorf("key %s=%q", k, v)
		}
	}
	if len(agent.Env) != len(plain.Env) {
		t.Errorf("env entries %d, was %d: the model only replaces", len(agent.Env), len(plain.Env))
	}
	agent.Env = plain.Env
	if !equality.Semantic.DeepEqual(agent, plain) {
		t.Error("the model changed the agent container beyond its env")
	}
}

// checkOnlyUpstreamDiffers holds a drill's Pod and a gateway's to one
// wiring: they differ only in the sidecar's upstream (the scenario, or the
// upstream's URL and key file), the key's volume and mount, and what a
// drill changes in any case (its scenario's guards, its label).
func checkOnlyUpstreamDiffers(t *testing.T, drill, gateway *corev1.Pod) {
	t.Helper()
	d, g := drill.DeepCopy(), gateway.DeepCopy()
	ds, gs := &d.Spec.InitContainers[0], &g.Spec.InitContainers[0]
	drop := func(env []corev1.EnvVar, names ...string) []corev1.EnvVar {
		return slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return slices.Contains(names, e.Name) })
	}
	ds.Env = drop(ds.Env, protocol.EnvDrillScenario, protocol.EnvGuards)
	gs.Env = drop(gs.Env, protocol.EnvModelUpstream, protocol.EnvModelKeyFile, protocol.EnvGuards)
	gs.VolumeMounts = slices.DeleteFunc(gs.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == ModelKeyVolume })
	g.Spec.Volumes = slices.DeleteFunc(g.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == ModelKeyVolume })
	delete(d.Labels, twv1.LabelDrill)
	if !equality.Semantic.DeepEqual(d, g) {
		dy, _ := yaml.Marshal(d)
		gy, _ := yaml.Marshal(g)
		t.Errorf("the drill's Pod and the gateway's differ beyond the upstream and key:\n%s\n---\n%s", dy, gy)
	}
}

// The gateway's key is in no container but the sidecar, and in no env:
// only the Secret volume, read-only, mounted in the sidecar alone, holds
// it. The agent gets the placeholder in each key env its template set
// (here two, one of them a valueFrom of the very Secret, which is dropped).
func TestGatewayKeyOnlyInSidecar(t *testing.T) {
	run := newRun("ns", "r", func(r *twv1.AgentRun) {
		r.Spec.Model = gatewayOf("api-key")
		c := &r.Spec.Template.Spec.Containers[0]
		c.Env = []corev1.EnvVar{
			{Name: "ANTHROPIC_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "llm"}, Key: "api-key"}}},
			{Name: "ANTHROPIC_AUTH_TOKEN", Value: "sk-real"},
		}
		r.Spec.Template.Spec.Containers = append(r.Spec.Template.Spec.Containers, corev1.Container{Name: "tools", Image: "tools"})
	})
	turn := &twv1.AgentTurn{}
	turn.Name, turn.Namespace = "r-0", "ns"
	pod, err := RenderPod(run, turn, modelOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil || e.Value == "sk-real" {
				t.Errorf("container %s: env %s holds the key", c.Name, e.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			if m.Name == ModelKeyVolume && (c.Name != protocol.SidecarContainerName || !m.ReadOnly) {
				t.Errorf("container %s mounts the key (read-only %v)", c.Name, m.ReadOnly)
			}
		}
	}
	env := envOf(pod.Spec.Containers[0])
	if env["ANTHROPIC_API_KEY"] != "turnwatch-placeholder-t" || env["ANTHROPIC_AUTH_TOKEN"] != "turnwatch-placeholder-t" {
		t.Errorf("agent keys %q %q, want the placeholder in both", env["ANTHROPIC_API_KEY"], env["ANTHROPIC_AUTH_TOKEN"])
	}
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == ModelKeyVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "llm" || len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != "api-key" {
		t.Fatalf("key volume %+v", vol)
	}
	sc := envOf(pod.Spec.InitContainers[0])
	if sc[protocol.EnvModelUpstream] != "https://llm.example/anthropic" || sc[protocol.EnvModelKeyFile] != "/var/run/turnwatch/model-key/key" ||
		sc[protocol.EnvModelToken] != "turnwatch-placeholder-t" || sc[protocol.EnvDrillScenario] != "" {
		t.Errorf("sidecar env %v", sc)
	}
}

// Each turn gets its own placeholder, and it is no turn's UID.
func TestModelToken(t *testing.T) {
	a, errA := ModelToken()
	b, errB := ModelToken()
	if errA != nil || errB != nil || a == b || !strings.HasPrefix(a, modelTokenPrefix) || len(a) < len(modelTokenPrefix)+32 {
		t.Errorf("tokens %q %q (%v %v)", a, b, errA, errB)
	}
}

func TestRenderDrillRefused(t *testing.T) {
	run := readCLISample(t, "codex")
	run.Spec.Drill = &twv1.Drill{Scenario: "healthy"}
	run.Spec.Template.Spec.Containers[0].Args = []string{"exec codex exec --json \"$TURNWATCH_PROMPT\""}
	turn := &twv1.AgentTurn{}
	turn.Name, turn.Namespace = "cli-codex-0", "ns"
	_, err := RenderPod(run, turn, modelOptions())
	var refused *turnpolicy.DrillRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Errorf("got %v, want a drill refusal naming OPENAI_BASE_URL", err)
	}
	// The same template with a gateway: a template refusal, the turn fails
	// as infra naming it.
	run.Spec.Drill, run.Spec.Model = nil, gatewayOf("k")
	_, err = RenderPod(run, turn, modelOptions())
	var template *TemplateRefusedError
	if !errors.As(err, &template) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") || !strings.Contains(err.Error(), "model gateway") {
		t.Errorf("got %v, want a template refusal naming OPENAI_BASE_URL and the gateway", err)
	}
}

func TestSetEnv(t *testing.T) {
	src := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}
	for _, c := range []struct {
		name string
		in   []corev1.EnvVar
		want []corev1.EnvVar
	}{
		{"added", []corev1.EnvVar{{Name: "A", Value: "1"}}, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "K", Value: "v"}}},
		{"replaced in place", []corev1.EnvVar{{Name: "K", ValueFrom: src}, {Name: "A", Value: "$(K)"}}, []corev1.EnvVar{{Name: "K", Value: "v"}, {Name: "A", Value: "$(K)"}}},
		{"duplicates joined", []corev1.EnvVar{{Name: "K", Value: "x"}, {Name: "A"}, {Name: "K", Value: "y"}}, []corev1.EnvVar{{Name: "K", Value: "v"}, {Name: "A"}}},
	} {
		if got := setEnv(c.in, "K", "v"); !equality.Semantic.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The admission policy refuses at apply the drills the controller would
// refuse: those of the formats whose endpoint needs a config of their own.
func TestDrillPolicyFormats(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "sidecar", "validatingadmissionpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range slices.Sorted(maps.Keys(scriptedmodel.Endpoints)) {
		if scriptedmodel.Endpoints[f].Config != "" {
			want = append(want, "'"+f+"'")
		}
	}
	if list := "object.spec.format in [" + strings.Join(want, ", ") + "]"; !strings.Contains(string(b), list) {
		t.Errorf("turnwatch-agentrun-drill does not match %s", list)
	}
}
