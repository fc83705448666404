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

// A drill of each CLI sample changes the agent container's endpoint and key
// env and nothing else of it; the sidecar is told the scenario and the
// port, and waits for its model before the agent starts.
func TestRenderDrillOfEachSample(t *testing.T) {
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
			run.Spec.Drill = &twv1.Drill{Scenario: "cycle"}
			drill, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, DrillPort: 20123})
			if err != nil {
				t.Fatal(err)
			}
			ep := scriptedmodel.Endpoints[format]
			agent := drill.Spec.Containers[0]
			changed := map[string]string{}
			for _, e := range agent.Env {
				if i := slices.IndexFunc(plain.Spec.Containers[0].Env, func(p corev1.EnvVar) bool { return p.Name == e.Name }); i < 0 || !equality.Semantic.DeepEqual(plain.Spec.Containers[0].Env[i], e) {
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
				if !slices.Contains(ep.Keys, k) || v != drillKey {
					t.Errorf("key %s=%q", k, v)
				}
			}
			if len(agent.Env) != len(plain.Spec.Containers[0].Env) {
				t.Errorf("env entries %d, was %d: the drill only replaces", len(agent.Env), len(plain.Spec.Containers[0].Env))
			}
			agent.Env = plain.Spec.Containers[0].Env
			if !equality.Semantic.DeepEqual(agent, plain.Spec.Containers[0]) {
				t.Error("the drill changed the agent container beyond its env")
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
			if drill.Labels[twv1.LabelDrill] != "cycle" || drill.Labels[twv1.LabelDrillPort] != "20123" {
				t.Errorf("labels %v", drill.Labels)
			}
		})
	}
}

func TestRenderDrillRefused(t *testing.T) {
	run := readCLISample(t, "codex")
	run.Spec.Drill = &twv1.Drill{Scenario: "healthy"}
	run.Spec.Template.Spec.Containers[0].Args = []string{"exec codex exec --json \"$TURNWATCH_PROMPT\""}
	turn := &twv1.AgentTurn{}
	turn.Name, turn.Namespace = "cli-codex-0", "ns"
	_, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, DrillPort: 20000})
	var refused *turnpolicy.DrillRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Errorf("got %v, want a drill refusal naming OPENAI_BASE_URL", err)
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
