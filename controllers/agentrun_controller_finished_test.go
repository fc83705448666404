package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Terminal is terminal: once Succeeded, Faulted or Aborted, a run keeps its
// phase, attempts, steps and cost and starts no turn, whatever is edited or
// deleted afterwards.
func TestTerminalIsTerminal(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})

	// Faulted without a reroll (max 0); then the policy is raised, the
	// cancel flag set, and its only turn deleted.
	create(t, newRun(ns, "faulted", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)} }))
	waitPod(t, ns, "faulted-0")
	playSidecar(t, ns, "faulted-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":4,"costUSD":"0.02463"}`))
	playSidecar(t, ns, "faulted-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	before := runPhase(t, ns, "faulted", twv1.RunFaulted).Status

	// Succeeded; then cancelled, and its turn deleted.
	create(t, newRun(ns, "done"))
	waitPod(t, ns, "done-0")
	playSidecar(t, ns, "done-0", finishedCond(protocol.Summary{Progress: counts(2, "0.01"), StopReason: "end", Result: true}))
	doneBefore := runPhase(t, ns, "done", twv1.RunSucceeded).Status

	edit(t, ns, "faulted", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](3)} })
	edit(t, ns, "done", func(r *twv1.AgentRun) { r.Spec.Cancel = true })
	edit(t, ns, "faulted", func(r *twv1.AgentRun) { r.Spec.Cancel = true })
	for _, name := range []string{"faulted-0", "done-0"} {
		turn, err := getTurn(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Delete(context.Background(), turn); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		run   string
		phase twv1.RunPhase
		want  twv1.AgentRunStatus
	}{{"faulted", twv1.RunFaulted, before}, {"done", twv1.RunSucceeded, doneBefore}} {
		eventually(t, c.run+" read the edits", func() error {
			run, err := getRun(ns, c.run)
			if err == nil && run.Status.ObservedGeneration != run.Generation {
				err = fmt.Errorf("observedGeneration %d of %d", run.Status.ObservedGeneration, run.Generation)
			}
			return err
		})
		consistently(t, c.run+" stays as it finished", 2*time.Second, func() error {
			run, err := getRun(ns, c.run)
			if err != nil {
				return err
			}
			st, w := run.Status, c.want
			if st.Phase != c.phase || st.Attempts != w.Attempts || st.Steps != w.Steps || st.CostUSD != w.CostUSD ||
				len(st.Turns) != len(w.Turns) || st.CompletionTime == nil || !st.CompletionTime.Equal(w.CompletionTime) {
				return fmt.Errorf("status moved: %+v, was %+v", st, w)
			}
			var list twv1.AgentTurnList
			if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{twv1.LabelRun: c.run}); err != nil {
				return err
			}
			if len(list.Items) != 0 {
				return fmt.Errorf("a new turn: %s", list.Items[0].Name)
			}
			return nil
		})
	}
	if before.Attempts != 1 || before.CostUSD != "0.02463" || before.Steps != 4 {
		t.Errorf("faulted run recorded attempts %d steps %d cost %s", before.Attempts, before.Steps, before.CostUSD)
	}
}

// A turn deleted while it runs counts: the run does not make a second turn
// of the same name, attempts stay a high-water mark, and the deleted turn
// is a failed (infra) turn that the policy rerolls under the next name.
func TestDeletedLiveTurnCounts(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	runningRun(t, newRun(ns, "gone"))
	if err := reportProgress(k8s, ns, "gone", progressBody(3, "0.50", "gone-0", 3, "0.5")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run counts the running turn's cost", func() error {
		run, err := getRun(ns, "gone")
		if err == nil && run.Status.CostUSD != "0.50" {
			err = fmt.Errorf("cost %s", run.Status.CostUSD)
		}
		return err
	})
	turn, err := getTurn(ns, "gone-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "gone-1")
	playSidecar(t, ns, "gone-1", finishedCond(protocol.Summary{Progress: counts(1, "0.25"), StopReason: "end", Result: true}))
	run := runPhase(t, ns, "gone", twv1.RunSucceeded)
	if run.Status.Attempts != 2 || run.Status.CostUSD != "0.75" || run.Status.Steps != 4 || len(run.Status.Turns) != 2 ||
		run.Status.Turns[0].ErrorType != twv1.ClassInfra {
		t.Fatalf("status %+v", run.Status)
	}
	t1, _ := getTurn(ns, "gone-1")
	if t1.Spec.PriorCostUSD != "0.50" {
		t.Errorf("the reroll was told earlier turns cost %q, want 0.50 (the deleted turn's)", t1.Spec.PriorCostUSD)
	}
	if _, err := getTurn(ns, "gone-0"); err == nil {
		t.Error("turn gone-0 was made again")
	}
}

// edit changes a run's spec, retrying on conflicts.
func edit(t *testing.T, ns, name string, change func(*twv1.AgentRun)) {
	t.Helper()
	eventually(t, "edit "+name, func() error {
		run, err := getRun(ns, name)
		if err != nil {
			return err
		}
		change(run)
		return k8s.Update(context.Background(), run)
	})
}

// A finished run with steps and cost is released in the first pass after
// its deletion, even right after a pass that wrote its status: the write
// memo must see the cached copy as current, so the finalizer goes (and a
// TTL would run) instead of the pass waiting out the memo's TTL.
func TestFinishedRunReleasedInOnePass(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	run := newRun(ns, "finished", func(r *twv1.AgentRun) { r.Finalizers = []string{twv1.Finalizer} })
	create(t, run)
	done := metav1.Now()
	run.Status = twv1.AgentRunStatus{
		Phase: twv1.RunSucceeded, Attempts: 1, Steps: 3, CostUSD: "0.42", CompletionTime: &done,
		Turns: []twv1.TurnRef{{Name: "finished-0", Outcome: twv1.TurnSucceeded, Steps: 3, CostUSD: "0.42"}},
	}
	if err := k8s.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	r := &agentrun.AgentRunReconciler{Client: k8s, APIReader: k8s, Scheme: testScheme,
		Recorder: events.NewFakeRecorder(10), Clock: clock.RealClock{}, Config: shared.DefaultConfig()}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: run.Name}}

	// This pass writes observedGeneration, and remembers the write.
	if res, err := r.Reconcile(ctx, req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	if got, err := getRun(ns, run.Name); err != nil || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("observedGeneration not written: %+v, %v", got, err)
	}
	if err := k8s.Delete(ctx, run); err != nil {
		t.Fatal(err)
	}
	res, err := r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("pass after the deletion: %+v, %v; want the finalizer released at once", res, err)
	}
	if _, err := getRun(ns, run.Name); !apierrors.IsNotFound(err) {
		t.Fatalf("the run is still there (%v): its finalizer was not released", err)
	}
}
