package controllers

import (
	"context"
	"testing"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/internal/fixture"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// counts is a progress report of steps and a decimal cost.
func counts[N int | int64](steps N, cost string) protocol.Progress {
	return fixture.Counts(steps, cost)
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
