package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// pod/NAME names a Pod, in kubectl's spellings; anything else is a run.
func TestPodArg(t *testing.T) {
	tests := []struct {
		arg, name string
		ok        bool
	}{
		{"pod/nightly-x7k2p", "nightly-x7k2p", true},
		{"pods/nightly-x7k2p", "nightly-x7k2p", true},
		{"po/p", "p", true},
		{"Pod/p", "p", true},
		{"cli-claude", "", false},
		{"pod/", "", false},
		{"podx/p", "", false},
		{"agentrun/r", "", false},
	}
	for _, tt := range tests {
		if name, ok := podArg(tt.arg); name != tt.name || ok != tt.ok {
			t.Errorf("podArg(%q) = %q %v, want %q %v", tt.arg, name, ok, tt.name, tt.ok)
		}
	}
}

// A run's Pod belongs to the AgentTurn that controls it.
func TestTurnOfPod(t *testing.T) {
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r-1", OwnerReferences: []metav1.OwnerReference{
		{Kind: "AgentTurn", Name: "r-1-turn", Controller: &yes}}}}
	if got := turnOfPod(pod); got != "r-1-turn" {
		t.Errorf("turnOfPod = %q", got)
	}
	pod.OwnerReferences = nil
	if got := turnOfPod(pod); got != "r-1" {
		t.Errorf("turnOfPod of a Pod no turn controls = %q", got)
	}
}

// An attached Pod's stream is read with the turn's format, agent container
// and guards; the rest (audit, prices) is the sidecar's env; a later Pod of
// the turn's name is not the turn's.
func TestAttachedOptions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: protocol.SidecarContainerName, Env: []corev1.EnvVar{
			{Name: protocol.EnvFormat, Value: "auto"},
			{Name: protocol.EnvAgentContainer, Value: "main"},
			{Name: protocol.EnvGuards, Value: `{"identicalCalls": 9}`},
			{Name: protocol.EnvAudit, Value: "stall"},
		}}},
		Containers: []corev1.Container{{Name: "main"}, {Name: "worker"}},
	}}
	at := &twv1.AgentTurn{Spec: twv1.AgentTurnSpec{
		PodRef: &twv1.AttachedPod{Name: "p", UID: "u1", Format: twv1.FormatCodex, AgentContainer: "worker"},
		Guards: []twv1.GuardSetting{{Name: "identicalCalls", Value: "3", Source: "default"}, {Name: "stepBudget", Value: "64", Source: "annotation"}},
	}}
	opts, c, err := attachedOptions(pod, at)
	if err != nil || opts.Format != "codex" || c != "worker" || opts.Guards.IdenticalCalls != 3 || opts.Guards.StepBudget != 64 ||
		strings.Join(opts.Audit, ",") != "stall" {
		t.Errorf("%+v %q %v", opts, c, err)
	}
	at.Spec.Guards = nil // no settings recorded: the sidecar's env
	if opts, _, err := attachedOptions(pod, at); err != nil || opts.Guards.IdenticalCalls != 9 {
		t.Errorf("no spec.guards: %+v %v", opts.Guards, err)
	}
	at.Spec.Guards = []twv1.GuardSetting{{Name: "identicalCalls", Value: `"many"`}}
	if _, _, err := attachedOptions(pod, at); err == nil || !strings.Contains(err.Error(), "spec.guards") {
		t.Errorf("bad spec.guards: %v", err)
	}
	at.Spec.Guards = nil
	pod.UID = "u2"
	if _, _, err := attachedOptions(pod, at); err == nil || !strings.Contains(err.Error(), "a later Pod") {
		t.Errorf("another Pod of the name: %v", err)
	}
}

// A turn's settings read as the engine's guards, over its defaults.
func TestSettingsGuards(t *testing.T) {
	g, err := settingsGuards([]twv1.GuardSetting{{Name: "stepBudget", Value: "12"}, {Name: "stallTimeout", Value: `"2m"`}, {Name: "maxCostUSD", Value: "null"}})
	def := monitor.DefaultGuards()
	if err != nil || g.StepBudget != 12 || g.StallTimeout.D() != 2*time.Minute || g.MaxCostUSD != def.MaxCostUSD {
		t.Errorf("%+v %v", g, err)
	}
	if _, err := settingsGuards([]twv1.GuardSetting{{Name: "maxSteps", Value: "12"}}); err == nil {
		t.Error("an unknown guard accepted")
	}
}

// Forgeable is shown with the sidecar's warnings.
func TestNoteConditions(t *testing.T) {
	got := noteConditions()
	if !slices.Contains(got, twv1.TurnConditionForgeable) || len(got) != len(protocol.Warnings)+1 {
		t.Errorf("noteConditions = %v", got)
	}
}

func TestAttachedPhase(t *testing.T) {
	at := &twv1.AgentTurn{}
	if got := attachedPhase(at); got != "Running" {
		t.Errorf("no outcome: %q", got)
	}
	at.Status.Outcome = twv1.TurnFailed
	if got := attachedPhase(at); got != "Failed" {
		t.Errorf("failed: %q", got)
	}
}
