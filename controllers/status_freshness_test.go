package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestProgressPeriod(t *testing.T) {
	for _, c := range []struct {
		freshness time.Duration
		want      string
	}{
		{time.Minute, "55"},
		{100 * time.Second, "95"},
		{5 * time.Second, "1"},
		{2 * time.Second, "1"},
	} {
		if got := shared.ProgressEnv(c.freshness); got.Name != protocol.EnvProgressPeriod || got.Value != c.want {
			t.Errorf("freshness %s: %s=%s, want %s", c.freshness, got.Name, got.Value, c.want)
		}
	}
}

func TestCountsOnly(t *testing.T) {
	base := twv1.AgentTurnStatus{PodName: "p", Steps: 3, CostUSD: "0.1"}
	for _, c := range []struct {
		name string
		edit func(*twv1.AgentTurnStatus)
		want bool
	}{
		{"steps", func(s *twv1.AgentTurnStatus) { s.Steps = 4 }, true},
		{"cost", func(s *twv1.AgentTurnStatus) { s.CostUSD = "0.2" }, true},
		{"nudge too", func(s *twv1.AgentTurnStatus) { s.Steps, s.Nudges = 4, 1 }, false},
		{"outcome too", func(s *twv1.AgentTurnStatus) { s.Steps, s.Outcome = 4, twv1.TurnFailed }, false},
	} {
		next := base
		c.edit(&next)
		if got := shared.CountsOnly(base, next); got != c.want {
			t.Errorf("%s: countsOnly = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCountsAhead(t *testing.T) {
	st := twv1.AgentTurnStatus{Steps: 3, CostUSD: "0.10"}
	for _, c := range []struct {
		steps int64
		cost  string
		want  bool
	}{
		{3, "0.1", true},
		{4, "0.2", true},
		{2, "0.2", false},
		{4, "0.05", false},
		{4, "lots", false}, // a report whose cost is not a decimal is dropped
	} {
		p, err := protocol.ParseProgress(c.steps, c.cost)
		if got := err == nil && shared.CountsAhead(p, st); got != c.want {
			t.Errorf("%d %s over %+v: %v, want %v", c.steps, c.cost, st, got, c.want)
		}
	}
}

// counts is a progress report of steps and a decimal cost.
func counts[N int | int64](steps N, cost string) protocol.Progress {
	p, err := protocol.ParseProgress(int64(steps), cost)
	if err != nil {
		panic(err)
	}
	return p
}

func TestCountsThrottle(t *testing.T) {
	var c shared.CountsThrottle
	uid, t0 := types.UID("u"), time.Unix(1000, 0)
	st := func(steps int64, cost string) *twv1.AgentTurnStatus {
		return &twv1.AgentTurnStatus{Steps: steps, CostUSD: cost}
	}
	if w := c.Hold(uid, st(1, "0.1"), t0, time.Minute); w != 0 {
		t.Fatalf("first write held %s", w)
	}
	if w := c.Hold(uid, st(5, "0.5"), t0.Add(20*time.Second), time.Minute); w != 40*time.Second {
		t.Fatalf("second write within the period: held %s, want 40s", w)
	}
	settled := st(3, "0.3") // a settle path that did not read the Pod
	c.Settle(uid, settled)
	if settled.Steps != 5 || settled.CostUSD != "0.50" {
		t.Fatalf("settled with %+v, want the held 5 steps", settled)
	}
	if w := c.Hold(uid, st(6, "0.6"), t0.Add(30*time.Second), time.Minute); w != 0 {
		t.Fatalf("a forgotten turn held %s", w)
	}
	if w := c.Hold(uid, st(7, "0.7"), t0.Add(90*time.Second), time.Minute); w != 0 {
		t.Fatalf("write after the period held %s", w)
	}
	final := st(9, "0.9") // the final summary is ahead of anything held
	c.Settle(uid, final)
	if final.Steps != 9 {
		t.Fatalf("settle lowered the counts: %+v", final)
	}
}

// A Pod deleted while its sidecar's counts are only in the run's
// status.progress: the turn settles with them, and the run's never go back.
func TestHeldCountsSurvivePodDeletion(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	runningRun(t, newRun(ns, "held", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)} }))
	if err := reportProgress(k8s, ns, "held", progressBody(9, "0.50", "held-0", 9, "0.5")); err != nil {
		t.Fatal(err)
	}
	pod, err := getPod(ns, "held-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	turn := turnSettled(t, ns, "held-0")
	run := runPhase(t, ns, "held", twv1.RunFaulted)
	// The turn's cost is written as monitor.Money writes it: "0.5" reads "0.50".
	if turn.Status.Steps != 9 || turn.Status.CostUSD != "0.50" || run.Status.Steps != 9 || run.Status.CostUSD != "0.50" {
		t.Errorf("after the Pod's deletion: turn %d %s, run %d %s", turn.Status.Steps, turn.Status.CostUSD, run.Status.Steps, run.Status.CostUSD)
	}
}

// The sidecar's progress period follows statusFreshness; without one the
// sidecar keeps its own default.
func TestRenderProgressPeriod(t *testing.T) {
	for _, c := range []struct {
		freshness time.Duration
		want      string // "" for no env
	}{{time.Minute, "55"}, {0, ""}} {
		run := newRun("ns", "r")
		turn := &twv1.AgentTurn{}
		turn.Name, turn.Namespace = "r-0", "ns"
		turn.Spec = twv1.AgentTurnSpec{RunName: "r", Prompt: "p"}
		pod, err := render.RenderPod(run, turn, render.RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, Freshness: c.freshness})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, e := range pod.Spec.InitContainers[0].Env {
			if e.Name == protocol.EnvProgressPeriod {
				got = e.Value
			}
		}
		if got != c.want {
			t.Errorf("freshness %s: %s=%q, want %q", c.freshness, protocol.EnvProgressPeriod, got, c.want)
		}
	}
}

// The cache keeps neither managedFields nor prompts nor the Pods' env.
func TestCacheTrims(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	run := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf}, Spec: twv1.AgentRunSpec{Prompt: "p", Format: twv1.FormatPi}}
	turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf}, Spec: twv1.AgentTurnSpec{Prompt: "p", RunName: "r"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: mf, Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "s", Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}},
		Containers:     []corev1.Container{{Name: "agent", Env: []corev1.EnvVar{{Name: protocol.EnvPrompt, Value: "p"}}}},
	}}
	_, _ = shared.TrimRun(run)
	_, _ = shared.TrimTurn(turn)
	_, _ = shared.TrimPod(pod)
	if run.ManagedFields != nil || run.Spec.Prompt != "" || run.Spec.Format != twv1.FormatPi {
		t.Errorf("run %+v", run)
	}
	if turn.ManagedFields != nil || turn.Spec.Prompt != "" || turn.Spec.RunName != "r" {
		t.Errorf("turn %+v", turn)
	}
	if pod.ManagedFields != nil || pod.Spec.InitContainers[0].Env != nil || pod.Spec.Containers[0].Env != nil ||
		pod.Spec.Containers[0].Name != "agent" || pod.Labels["a"] != "b" {
		t.Errorf("pod %+v", pod)
	}
}
