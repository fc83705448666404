package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
)

// lagSeries is the run's turnwatch_sidecar_lag_seconds, and whether it is
// served at all.
func lagSeries(ns, run string) (float64, bool) {
	ch := make(chan prometheus.Metric, 64)
	go func() { agentrun.SidecarLag.Collect(ch); close(ch) }()
	val, found := 0.0, false
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == ns && labels["run"] == run {
			val, found = d.GetGauge().GetValue(), true
		}
	}
	return val, found
}

func TestCurrentLag(t *testing.T) {
	lag := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	running := func(turns []twv1.TurnRef, p *twv1.RunProgress) *twv1.AgentRun {
		return &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u"},
			Status: twv1.AgentRunStatus{Phase: twv1.RunRunning, Turns: turns, Progress: p}}
	}
	cur := []twv1.TurnRef{{Name: "r-0", Outcome: twv1.TurnFailed}, {Name: "r-1"}}
	for _, tc := range []struct {
		name string
		run  *twv1.AgentRun
		want float64
	}{
		{"the current turn's report", running(cur, &twv1.RunProgress{Turn: "r-1", RunUID: "u", Lag: lag(2500 * time.Millisecond)}), 2.5},
		{"a report without a lag", running(cur, &twv1.RunProgress{Turn: "r-1", RunUID: "u"}), -1},
		{"the turn before's report", running(cur, &twv1.RunProgress{Turn: "r-0", RunUID: "u", Lag: lag(time.Second)}), -1},
		{"an earlier run's sidecar", running(cur, &twv1.RunProgress{Turn: "r-1", RunUID: "old", Lag: lag(time.Second)}), -1},
		{"no turn running", running(cur[:1], &twv1.RunProgress{Turn: "r-0", RunUID: "u", Lag: lag(time.Second)}), -1},
		{"a negative lag", running(cur, &twv1.RunProgress{Turn: "r-1", RunUID: "u", Lag: lag(-time.Second)}), 0},
		{"a finished run", func() *twv1.AgentRun {
			r := running(cur, &twv1.RunProgress{Turn: "r-1", RunUID: "u", Lag: lag(time.Second)})
			r.Status.Phase = twv1.RunSucceeded
			return r
		}(), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agentrun.CurrentLag(tc.run); got != tc.want {
				t.Errorf("lag %v, want %v", got, tc.want)
			}
			agentrun.SetLagMetric(tc.run)
			got, served := lagSeries("ns", "r")
			if served != (tc.want >= 0) || served && got != tc.want {
				t.Errorf("served %v (%v), want %v", served, got, tc.want)
			}
		})
	}
	agentrun.ForgetLagMetric(types.NamespacedName{Namespace: "ns", Name: "r"})
}

// The manager serves a running run's sidecar lag, as the sidecar's own
// credential reported it through the shipped policy, and drops the series
// once the run has ended.
func TestSidecarLagMetric(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	pod := runningRun(t, newRun(ns, "lag"))
	sidecar := sidecarOf(t, ns, pod.Spec.ServiceAccountName, pod)
	run, err := getRun(ns, "lag")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(withRunUID(progressBody(1, "0.01", "lag-0", 1, "0.01"), string(run.UID)), `"progress":{`, `"progress":{"lag":"7.25s",`, 1)
	eventually(t, "the report taken", func() error { return reportProgress(sidecar, ns, "lag", body) })
	eventually(t, "the lag served", func() error {
		if v, ok := lagSeries(ns, "lag"); !ok || v != 7.25 {
			return fmt.Errorf("turnwatch_sidecar_lag_seconds %v (served: %v), want 7.25", v, ok)
		}
		return nil
	})
	if err := k8s.Patch(context.Background(), &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lag"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))); err != nil {
		t.Fatal(err)
	}
	runPhase(t, ns, "lag", twv1.RunAborted)
	eventually(t, "the series dropped", func() error {
		if v, ok := lagSeries(ns, "lag"); ok {
			return fmt.Errorf("turnwatch_sidecar_lag_seconds still served for an ended run: %v", v)
		}
		return nil
	})
}
