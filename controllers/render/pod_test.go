package render

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestRenderPod(t *testing.T) {
	run := newRun("ns", "r", func(r *twv1.AgentRun) {
		r.Spec.Template.Spec.Containers = []corev1.Container{
			{Name: "proxy", Image: "p"},
			{Name: "agent", Image: "a", Env: []corev1.EnvVar{{Name: "KEEP", Value: "1"}}},
		}
		r.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "clone", Image: "git"}}
		r.Spec.Template.Spec.ServiceAccountName = "agent-sa"
		r.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		r.Spec.AgentContainer = "agent"
		r.Spec.Session, r.Spec.Continue = "s", true
		r.Spec.Format = ""
		r.Spec.Guards = &twv1.Guards{WorldTools: []string{"run_tests"}}
	})
	turn := &twv1.AgentTurn{}
	turn.Name, turn.Namespace = "r-2", "ns"
	turn.Spec = twv1.AgentTurnSpec{RunName: "r", Attempt: 2, Prompt: "p", ConversationID: "c", Continue: false, PriorCostUSD: "0.75"}
	pod, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "r-2" || pod.Labels[twv1.LabelAttempt] != "2" || pod.Labels[twv1.LabelSession] != "s" {
		t.Errorf("meta %v %v", pod.Name, pod.Labels)
	}
	if pod.Spec.ServiceAccountName != "agent-sa" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("sa %s restart %s", pod.Spec.ServiceAccountName, pod.Spec.RestartPolicy)
	}
	if names := []string{pod.Spec.InitContainers[0].Name, pod.Spec.InitContainers[1].Name}; names[0] != protocol.SidecarContainerName || names[1] != "clone" {
		t.Errorf("init containers %v: the sidecar comes first", names)
	}
	agent := envOf(pod.Spec.Containers[1])
	if agent["KEEP"] != "1" || agent[protocol.EnvAttempt] != "2" || agent[protocol.EnvContinue] != "false" {
		t.Errorf("agent env %v", agent)
	}
	if len(pod.Spec.Containers[0].Env) != 0 {
		t.Errorf("proxy env %v", pod.Spec.Containers[0].Env)
	}
	side := envOf(pod.Spec.InitContainers[0])
	if side[protocol.EnvFormat] != "auto" || side[protocol.EnvAgentContainer] != "agent" || side[protocol.EnvPriorCostUSD] != "0.75" {
		t.Errorf("sidecar env %v", side)
	}
	if _, ok := side[protocol.EnvPrices]; ok {
		t.Errorf("no price table configured, yet TURNWATCH_PRICES is set")
	}
	var g twv1.Guards
	if err := json.Unmarshal([]byte(side[protocol.EnvGuards]), &g); err != nil || g.WorldTools[0] != "run_tests" || *g.StepBudget != 256 || g.MaxCostUSD != nil {
		t.Errorf("guards %s %v", side[protocol.EnvGuards], err)
	}
	// The template is not changed.
	if run.Spec.Template.Spec.Containers[1].Env[0].Name != "KEEP" || len(run.Spec.Template.Spec.Containers[1].Env) != 1 {
		t.Error("renderPod changed the run's template")
	}

	run.Spec.AgentContainer = "nope"
	if _, err := RenderPod(run, turn, RenderOptions{}); err == nil {
		t.Error("a missing agent container renders")
	}
}
