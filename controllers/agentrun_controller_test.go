package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A trip stops the pod, fails the turn with its class and rerolls with the
// identical prompt and a new conversation; the second trip faults the run
// once, keeping the last pod.
func TestTripRerollThenFault(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "r"))

	waitPod(t, ns, "r-0")
	playSidecar(t, ns, "r-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	podStopped(t, ns, "r-0")
	first := turnSettled(t, ns, "r-0")
	want := twv1.TurnError{Type: twv1.ClassRunaway, Detector: monitor.DetectorIdenticalCalls, Message: "repeated an identical tool call 4 times"}
	if first.Status.Outcome != twv1.TurnFailed || *first.Status.Error != want {
		t.Fatalf("turn r-0: %s %+v, want Failed %+v", first.Status.Outcome, first.Status.Error, want)
	}

	waitPod(t, ns, "r-1")
	second, err := getTurn(ns, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if second.Spec.Prompt != first.Spec.Prompt || second.Spec.Attempt != 1 {
		t.Errorf("reroll: prompt %q attempt %d, want the identical prompt, attempt 1", second.Spec.Prompt, second.Spec.Attempt)
	}
	if second.Spec.ConversationID == first.Spec.ConversationID || second.Spec.ConversationID == "" {
		t.Errorf("reroll conversation %q, first %q: want a new one", second.Spec.ConversationID, first.Spec.ConversationID)
	}
	rerolled := waitEvents(t, ns, "r", agentrun.EventRerolled, 1)
	if err := containsAll(rerolled[0].Note, "r-0", "runaway", "identicalCalls", "repeated an identical tool call 4 times", "r-1"); err != nil {
		t.Error("Rerolled event:", err)
	}

	playSidecar(t, ns, "r-1", trip(monitor.DetectorStepBudget, "exceeded 256 steps"))
	run := runPhase(t, ns, "r", twv1.RunFaulted)
	wantFault := twv1.Fault{Class: twv1.ClassRunaway, Detector: monitor.DetectorStepBudget, Message: "exceeded 256 steps", Turn: "r-1"}
	if run.Status.Fault == nil || *run.Status.Fault != wantFault {
		t.Errorf("fault %+v, want %+v", run.Status.Fault, wantFault)
	}
	if run.Status.Attempts != 2 || len(run.Status.Turns) != 2 || run.Status.Turns[1].ErrorType != twv1.ClassRunaway {
		t.Errorf("status turns: attempts %d %+v", run.Status.Attempts, run.Status.Turns)
	}
	faulted := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionFaulted)
	ready := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionReady)
	if faulted == nil || faulted.Status != metav1.ConditionTrue || faulted.Reason != "Runaway" {
		t.Errorf("Faulted condition %+v", faulted)
	} else if err := containsAll(faulted.Message, "r-1", "stepBudget", "exceeded 256 steps", "no reroll left"); err != nil {
		t.Error(err)
	}
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "Runaway" {
		t.Errorf("Ready condition %+v", ready)
	}
	podStopped(t, ns, "r-1")
	waitEvents(t, ns, "r", agentrun.EventFaulted, 1)
	for name, c := range map[string]prometheus.Collector{
		"trips{identicalCalls,runaway}": shared.TripsTotal.WithLabelValues(monitor.DetectorIdenticalCalls, "runaway", "", shared.ModeEnforce),
		"trips{stepBudget,runaway}":     shared.TripsTotal.WithLabelValues(monitor.DetectorStepBudget, "runaway", "", shared.ModeEnforce),
		"rerolls{runaway}":              shared.RerollsTotal.WithLabelValues("runaway"),
		"faults{runaway}":               shared.FaultsTotal.WithLabelValues("runaway", ""),
		"turns{Failed,runaway}":         shared.TurnsTotal.WithLabelValues("Failed", "runaway", "", "false"),
	} {
		if v := promtestutil.ToFloat64(c); v < 1 {
			t.Errorf("metric %s = %v", name, v)
		}
	}
	if n, err := promtestutil.GatherAndCount(metrics.Registry, "turnwatch_turn_steps", "turnwatch_turn_cost_usd"); err != nil || n != 2 {
		t.Errorf("turn histograms in the registry: %d %v", n, err)
	}
	consistently(t, "no third turn, one fault, pods kept", time.Second, func() error {
		names, err := turnNames(ns, "r")
		if err != nil || len(names) != 2 {
			return fmt.Errorf("turns %v %v", names, err)
		}
		if evs, err := runEvents(ns, "r", agentrun.EventFaulted); err != nil || len(evs) != 1 {
			return fmt.Errorf("%d Faulted events %v", len(evs), err)
		}
		for _, p := range []string{"r-0", "r-1"} {
			if _, err := getPod(ns, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// A finished run with ttlSecondsAfterFinished is deleted once it passed, on
// the injected clock.
func TestTTLAfterFinished(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk})
	create(t, newRun(ns, "ttl", func(r *twv1.AgentRun) { r.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600) }))
	waitPod(t, ns, "ttl-0")
	playSidecar(t, ns, "ttl-0", finishedCond(protocol.Summary{Progress: counts(1, "0.01"), StopReason: "end", Result: true}))
	runPhase(t, ns, "ttl", twv1.RunSucceeded)
	consistently(t, "kept before the TTL", 500*time.Millisecond, func() error {
		_, err := getRun(ns, "ttl")
		return err
	})
	clk.Step(61 * time.Minute)
	// Poke the run so that the controller looks again (the real requeue
	// fires after the TTL in real time).
	run, _ := getRun(ns, "ttl")
	if err := k8s.Patch(context.Background(), run, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"poke":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run deleted after its TTL", func() error {
		if _, err := getRun(ns, "ttl"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// Each class meets its policy: stalled and degenerate get one reroll;
// overspend and length fault at once.
func TestClassPolicy(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	cases := []struct {
		run, detector string
		class         twv1.FaultClass
		rerolled      bool
	}{
		{"stall", monitor.DetectorStall, twv1.ClassStalled, true},
		{"degen", monitor.DetectorDegeneration, twv1.ClassDegenerate, true},
		{"spend", monitor.DetectorSpend, twv1.ClassOverspend, false},
		{"length", monitor.DetectorLengthStop, twv1.ClassLength, false},
	}
	for _, c := range cases {
		t.Run(c.run, func(t *testing.T) {
			t.Parallel()
			create(t, newRun(ns, c.run, func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{MaxCostUSD: ptr.To("1.50")} }))
			waitPod(t, ns, c.run+"-0")
			playSidecar(t, ns, c.run+"-0", trip(c.detector, "tripped "+c.detector))
			podStopped(t, ns, c.run+"-0")
			if got := turnSettled(t, ns, c.run+"-0"); got.Status.Error.Type != c.class {
				t.Fatalf("class %s, want %s", got.Status.Error.Type, c.class)
			}
			if !c.rerolled {
				run := runPhase(t, ns, c.run, twv1.RunFaulted)
				if run.Status.Fault.Class != c.class || run.Status.Attempts != 1 {
					t.Fatalf("fault %+v after %d attempts", run.Status.Fault, run.Status.Attempts)
				}
				consistently(t, "no reroll", 500*time.Millisecond, func() error {
					if n, _ := turnNames(ns, c.run); len(n) != 1 {
						return fmt.Errorf("turns %v", n)
					}
					return nil
				})
				return
			}
			waitPod(t, ns, c.run+"-1")
			playSidecar(t, ns, c.run+"-1", trip(c.detector, "tripped again"))
			run := runPhase(t, ns, c.run, twv1.RunFaulted)
			if run.Status.Fault.Class != c.class || run.Status.Fault.Turn != c.run+"-1" {
				t.Fatalf("fault %+v", run.Status.Fault)
			}
		})
	}
}

// A continued conversation is never rerolled; its fault bumps the session
// epoch, so that the session's next continue gets a fresh conversation id,
// and a continue after a success keeps the conversation.
func TestContinueBumpsEpoch(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	inSession := func(cont bool) func(*twv1.AgentRun) {
		return func(r *twv1.AgentRun) { r.Spec.Session, r.Spec.Continue = "review-42", cont }
	}

	create(t, newRun(ns, "c1", inSession(true)))
	waitPod(t, ns, "c1-0")
	c1, _ := getTurn(ns, "c1-0")
	// A brand-new session has no conversation to resume: the first continue
	// starts it.
	if c1.Spec.Continue || c1.Spec.ConversationID != agentrun.SessionConversationID(ns, "review-42", 0) {
		t.Fatalf("c1-0: continue %v conversation %s, want a fresh start of epoch 0's", c1.Spec.Continue, c1.Spec.ConversationID)
	}
	pod, _ := getPod(ns, "c1-0")
	if pod.Labels[twv1.LabelSession] != "review-42" || c1.Labels[twv1.LabelSession] != "review-42" {
		t.Errorf("session labels: pod %v turn %v", pod.Labels, c1.Labels)
	}
	playSidecar(t, ns, "c1-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	run := runPhase(t, ns, "c1", twv1.RunFaulted)
	if run.Status.Epoch != 1 || run.Status.Attempts != 1 {
		t.Fatalf("c1: epoch %d attempts %d, want epoch bumped to 1 and no reroll", run.Status.Epoch, run.Status.Attempts)
	}
	if err := containsAll(run.Status.Conditions[0].Message+meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionFaulted).Message, "continued conversation is not rerolled"); err != nil {
		t.Error(err)
	}
	consistently(t, "no reroll of a continue", 500*time.Millisecond, func() error {
		if n, _ := turnNames(ns, "c1"); len(n) != 1 {
			return fmt.Errorf("turns %v", n)
		}
		return nil
	})

	create(t, newRun(ns, "c2", inSession(true)))
	waitPod(t, ns, "c2-0")
	c2, _ := getTurn(ns, "c2-0")
	if c2.Spec.ConversationID == c1.Spec.ConversationID || c2.Spec.Epoch != 1 {
		t.Fatalf("c2-0: conversation %s epoch %d, want fresh at epoch 1 (c1 had %s)", c2.Spec.ConversationID, c2.Spec.Epoch, c1.Spec.ConversationID)
	}
	pod2 := waitPod(t, ns, "c2-0")
	// After the epoch bump, nothing ran in the new conversation yet.
	if env := envOf(pod2.Spec.Containers[0]); env[protocol.EnvConversationID] != c2.Spec.ConversationID || env[protocol.EnvContinue] != "false" {
		t.Errorf("agent env %v", env)
	}
	playSidecar(t, ns, "c2-0", finishedCond(protocol.Summary{Progress: counts(3, "0.10"), StopReason: "end", Result: true}))
	runPhase(t, ns, "c2", twv1.RunSucceeded)

	create(t, newRun(ns, "c3", inSession(true)))
	waitPod(t, ns, "c3-0")
	if c3, _ := getTurn(ns, "c3-0"); c3.Spec.ConversationID != c2.Spec.ConversationID || !c3.Spec.Continue {
		t.Errorf("c3 after a success: conversation %s continue %v, want c2's %s resumed", c3.Spec.ConversationID, c3.Spec.Continue, c2.Spec.ConversationID)
	}
	if env := envOf(waitPod(t, ns, "c3-0").Spec.Containers[0]); env[protocol.EnvContinue] != "true" {
		t.Errorf("c3 agent env %v", env)
	}
}

// Turns that end without a trip: success, no-signal, infra (retried once).
func TestSettleWithoutTrip(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})

	t.Run("success", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "ok"))
		waitPod(t, ns, "ok-0")
		playSidecar(t, ns, "ok-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":2,"costUSD":"0.01"}`))
		eventually(t, "progress mirrored", func() error {
			turn, err := getTurn(ns, "ok-0")
			if err == nil && (turn.Status.Steps != 2 || turn.Status.CostUSD != "0.01") {
				err = fmt.Errorf("%+v", turn.Status)
			}
			return err
		})
		playSidecar(t, ns, "ok-0", finishedCond(protocol.Summary{Progress: counts(7, "0.25"), StopReason: "end", Result: true, Lines: 40}))
		run := runPhase(t, ns, "ok", twv1.RunSucceeded)
		if run.Status.Steps != 7 || run.Status.CostUSD != "0.25" || run.Status.Fault != nil {
			t.Errorf("status %+v", run.Status)
		}
		if c := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Ready %+v", c)
		}
		if pod, _ := getPod(ns, "ok-0"); pod.Spec.ActiveDeadlineSeconds != nil {
			t.Errorf("a successful agent is not stopped")
		}
	})

	t.Run("no-signal", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "quiet"))
		waitPod(t, ns, "quiet-0")
		playSidecar(t, ns, "quiet-0", func(s *corev1.PodStatus) {
			finishedCond(protocol.Summary{Progress: counts(1, "0"), StopReason: "tool_use"})(s)
			agentExited(0, "Completed", corev1.PodSucceeded)(s)
		})
		run := runPhase(t, ns, "quiet", twv1.RunFaulted)
		if run.Status.Fault.Class != twv1.ClassNoSignal || run.Status.Attempts != 1 {
			t.Errorf("fault %+v after %d attempts", run.Status.Fault, run.Status.Attempts)
		}
	})

	t.Run("infra", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "crash"))
		waitPod(t, ns, "crash-0")
		playSidecar(t, ns, "crash-0", agentExited(137, "OOMKilled", corev1.PodFailed))
		if turn := turnSettled(t, ns, "crash-0"); turn.Status.Error.Type != twv1.ClassInfra {
			t.Fatalf("crash-0: %+v", turn.Status.Error)
		}
		waitPod(t, ns, "crash-1") // retried once
		playSidecar(t, ns, "crash-1", func(s *corev1.PodStatus) {
			s.Phase = corev1.PodPending
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "agent:test",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull access denied"}}}}
		})
		run := runPhase(t, ns, "crash", twv1.RunFaulted)
		if err := containsAll(run.Status.Fault.Message, "ImagePullBackOff"); err != nil || run.Status.Fault.Class != twv1.ClassInfra {
			t.Errorf("fault %+v %v", run.Status.Fault, err)
		}
		podStopped(t, ns, "crash-1")
	})

	t.Run("refused pod", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "refused", func(r *twv1.AgentRun) {
			// Valid for the AgentRun schema, refused by Pod validation.
			r.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 99999}}
		}))
		run := runPhase(t, ns, "refused", twv1.RunFaulted)
		if err := containsAll(run.Status.Fault.Message, "the pod was refused", "containerPort"); err != nil || run.Status.Fault.Class != twv1.ClassInfra {
			t.Errorf("fault %+v %v", run.Status.Fault, err)
		}
		if run.Status.Attempts != 2 {
			t.Errorf("attempts %d: infra is retried once", run.Status.Attempts)
		}
	})

	t.Run("pod in the way", func(t *testing.T) {
		t.Parallel()
		// The test's own label makes the operator's cache see it.
		create(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "squat-0", Namespace: ns, Labels: map[string]string{twv1.LabelRun: "squat"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
		})
		create(t, newRun(ns, "squat", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} }))
		run := runPhase(t, ns, "squat", twv1.RunFaulted)
		if err := containsAll(run.Status.Fault.Message, "squat-0", "did not create"); err != nil || run.Status.Fault.Class != twv1.ClassInfra {
			t.Errorf("fault %+v %v", run.Status.Fault, err)
		}
	})

	t.Run("deleted pod", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "gone", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} }))
		pod := waitPod(t, ns, "gone-0")
		eventually(t, "turn records its pod", func() error {
			turn, err := getTurn(ns, "gone-0")
			if err == nil && turn.Status.PodName == "" {
				err = errors.New("no podName yet")
			}
			return err
		})
		if err := k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		run := runPhase(t, ns, "gone", twv1.RunFaulted)
		if run.Status.Fault.Class != twv1.ClassInfra {
			t.Errorf("fault %+v", run.Status.Fault)
		}
	})
}

// The agent exited without a Finished condition and the Pod is not over:
// the controller waits SettleGrace on its injected clock, then settles.
func TestSettleGraceUsesClock(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk})
	create(t, newRun(ns, "late"))
	waitPod(t, ns, "late-0")
	playSidecar(t, ns, "late-0", agentExited(0, "Completed", corev1.PodRunning))
	consistently(t, "waits for the sidecar", 700*time.Millisecond, func() error {
		if turn, _ := getTurn(ns, "late-0"); turn.Status.Outcome != "" {
			return fmt.Errorf("settled before the grace: %+v", turn.Status)
		}
		return nil
	})
	clk.Step(time.Minute)
	// Any change to the Pod brings the controller back (in production the
	// requeue does, after the grace in real time).
	playSidecar(t, ns, "late-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":0,"costUSD":"0"}`))
	if turn := turnSettled(t, ns, "late-0"); turn.Status.Error.Type != twv1.ClassNoSignal {
		t.Fatalf("%+v", turn.Status.Error)
	}
}

// A nudge is an Event on the run, once per turn, and the run goes on.
func TestNudge(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "n"))
	waitPod(t, ns, "n-0")
	playSidecar(t, ns, "n-0", condition(protocol.ConditionSilent, "SilentRun", "13 tool-only messages without a word"))
	evs := waitEvents(t, ns, "n", agentrun.EventNudged, 1)
	if err := containsAll(evs[0].Note, "n-0", "13 tool-only messages"); err != nil {
		t.Error(err)
	}
	playSidecar(t, ns, "n-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":20,"costUSD":"0.3"}`))
	consistently(t, "one nudge, run goes on", 700*time.Millisecond, func() error {
		if evs, _ := runEvents(ns, "n", agentrun.EventNudged); len(evs) != 1 {
			return fmt.Errorf("%d Nudged events", len(evs))
		}
		if pod, _ := getPod(ns, "n-0"); pod.Spec.ActiveDeadlineSeconds != nil {
			return errors.New("a nudge stopped the agent")
		}
		return nil
	})
	if turn, _ := getTurn(ns, "n-0"); turn.Status.Nudges != 1 || turn.Status.Outcome != "" {
		t.Errorf("turn %+v", turn.Status)
	}
}

// Deleting or cancelling a run stops its agent and records the turn Aborted.
func TestAbort(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		run := newRun(ns, "del")
		create(t, run)
		waitPod(t, ns, "del-0")
		if err := k8s.Delete(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		podStopped(t, ns, "del-0")
		if turn := turnSettled(t, ns, "del-0"); turn.Status.Outcome != twv1.TurnAborted || turn.Status.Error != nil {
			t.Errorf("turn %+v", turn.Status)
		}
		eventually(t, "run released", func() error {
			if _, err := getRun(ns, "del"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		run := newRun(ns, "cxl")
		create(t, run)
		waitPod(t, ns, "cxl-0")
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))
		if err := k8s.Patch(context.Background(), run, patch); err != nil {
			t.Fatal(err)
		}
		podStopped(t, ns, "cxl-0")
		runPhase(t, ns, "cxl", twv1.RunAborted)
		if turn, _ := getTurn(ns, "cxl-0"); turn.Status.Outcome != twv1.TurnAborted {
			t.Errorf("turn %+v", turn.Status)
		}
	})
}

// A manager that dies between creating the reroll and recording it leaves
// one reroll: the next manager finds it by its deterministic name.
func TestRestartMidReroll(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	var first *testManager
	crashed := make(chan struct{})
	var dead atomic.Bool // once dead, the process writes nothing more
	errDead := errors.New("killed mid-reroll")
	crashAfterReroll := func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if dead.Load() {
					return errDead
				}
				err := c.Create(ctx, obj, opts...)
				if turn, ok := obj.(*twv1.AgentTurn); ok && err == nil && turn.Spec.Attempt == 1 && dead.CompareAndSwap(false, true) {
					go first.stop() // the process dies right here
					close(crashed)
					return errDead
				}
				return err
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if dead.Load() {
					return errDead
				}
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if dead.Load() {
					return errDead
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if dead.Load() {
					return errDead
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}), nil
	}
	first = startManager(t, ns, managerOpts{newClient: crashAfterReroll})
	create(t, newRun(ns, "rs"))
	waitPod(t, ns, "rs-0")
	playSidecar(t, ns, "rs-0", trip(monitor.DetectorStall, "no event for 10m0s while the model was generating"))
	<-crashed
	first.stop()
	if run, _ := getRun(ns, "rs"); run.Status.Attempts != 1 {
		t.Fatalf("the crashed pass recorded the reroll: %+v", run.Status)
	}

	startManager(t, ns, managerOpts{})
	eventually(t, "the restarted manager records the reroll", func() error {
		run, err := getRun(ns, "rs")
		if err == nil && (run.Status.Attempts != 2 || run.Status.Phase != twv1.RunRunning) {
			err = fmt.Errorf("%+v", run.Status)
		}
		return err
	})
	waitPod(t, ns, "rs-1")
	waitEvents(t, ns, "rs", agentrun.EventRerolled, 1) // told by the restarted manager, not lost
	consistently(t, "exactly one reroll", time.Second, func() error {
		names, err := turnNames(ns, "rs")
		slices.Sort(names)
		if err != nil || !slices.Equal(names, []string{"rs-0", "rs-1"}) {
			return fmt.Errorf("turns %v %v", names, err)
		}
		return nil
	})
}

// A bad manifest is refused at admission with the field named.
func TestInvalidManifests(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name   string
		mutate func(*twv1.AgentRun)
		want   []string
	}{
		{"empty prompt", func(r *twv1.AgentRun) { r.Spec.Prompt = "" }, []string{"spec.prompt", "at least 1 chars"}},
		{"unknown format", func(r *twv1.AgentRun) { r.Spec.Format = "gpt" }, []string{"spec.format", "Unsupported value"}},
		{"duration", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{StallTimeout: ptr.To("ten minutes")} }, []string{"spec.guards.stallTimeout"}},
		{"tool timeout", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{ToolTimeout: ptr.To("30")} }, []string{"spec.guards.toolTimeout"}},
		{"cost", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{MaxCostUSD: ptr.To("$5")} }, []string{"spec.guards.maxCostUSD"}},
		{"world tools", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{WorldTools: []string{"run_tests", "run_tests"}} }, []string{"spec.guards.worldTools[1]", "Duplicate value"}},
		{"agent container", func(r *twv1.AgentRun) { r.Spec.AgentContainer = "claude" }, []string{"spec.agentContainer", "agentContainer must name a container"}},
		{"continue without session", func(r *twv1.AgentRun) { r.Spec.Continue = true }, []string{"spec.session", "continue needs a session"}},
		{"session store without a state folder", func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.SessionStore = twv1.FormatAuto, &twv1.SessionStore{ClaimName: "state"}
		}, []string{"spec.sessionStore.mountPath", "mountPath is required when format is auto"}},
		{"session store relative path", func(r *twv1.AgentRun) {
			r.Spec.SessionStore = &twv1.SessionStore{ClaimName: "state", MountPath: "state"}
		}, []string{"spec.sessionStore.mountPath"}},
		{"session store without a claim", func(r *twv1.AgentRun) {
			r.Spec.SessionStore = &twv1.SessionStore{MountPath: "/state"}
		}, []string{"spec.sessionStore.claimName"}},
		{"reroll overspend", func(r *twv1.AgentRun) {
			r.Spec.Rerolls = &twv1.RerollPolicy{Classes: []twv1.FaultClass{twv1.ClassOverspend}}
		}, []string{"spec.rerolls.classes", "overspend is never rerolled"}},
		{"negative budget", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](-1)} }, []string{"spec.guards.stepBudget"}},
		{"cycle of one", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{CycleRepeats: ptr.To[int32](1)} }, []string{"spec.guards.cycleRepeats", "0 (off) or at least 2"}},
		{"negative error repeats", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{ErrorRepeats: ptr.To[int32](-1)} }, []string{"spec.guards.errorRepeats"}},
		{"negative repeated text", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{RepeatedTextBytes: ptr.To[int32](-3)} }, []string{"spec.guards.repeatedTextBytes"}},
		{"no containers", func(r *twv1.AgentRun) { r.Spec.Template.Spec.Containers = nil }, []string{"spec.template"}},
		{"drill scenario", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "meltdown"} }, []string{"spec.drill.scenario", "Unsupported value"}},
		{"drill without a format", func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Drill = twv1.FormatAuto, &twv1.Drill{Scenario: "healthy"}
		}, []string{"spec.format", "drill needs a named format"}},
		{"gateway upstream not a URL", func(r *twv1.AgentRun) {
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "api.anthropic.com", KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}}
		}, []string{"spec.model.gateway.upstream", "http or https URL"}},
		{"gateway upstream not http", func(r *twv1.AgentRun) {
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "ftp://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}}
		}, []string{"spec.model.gateway.upstream", "http or https URL"}},
		{"gateway without a key", func(r *twv1.AgentRun) {
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "k"}}}
		}, []string{"spec.model.gateway.keySecretRef.key"}},
		{"gateway without a format", func(r *twv1.AgentRun) {
			r.Spec.Format = twv1.FormatAuto
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}}
		}, []string{"spec.format", "model.gateway needs a named format"}},
		{"gateway in a drill", func(r *twv1.AgentRun) {
			r.Spec.Drill = &twv1.Drill{Scenario: "healthy"}
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://models.example", KeySecretRef: twv1.SecretKeyRef{Name: "k", Key: "key"}}}
		}, []string{"spec.model.gateway", "a drill takes no model.gateway"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), newRun(ns, "bad", c.mutate))
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if e := containsAll(err.Error(), c.want...); e != nil {
				t.Error(e)
			}
		})
	}
	t.Run("immutable", func(t *testing.T) {
		run := newRun(ns, "fixed", func(r *twv1.AgentRun) { r.Spec.Session = "s" })
		create(t, run)
		for _, c := range []struct{ patch, field, want string }{
			{`{"spec":{"prompt":"something else"}}`, "spec.prompt", "prompt is immutable"},
			{`{"spec":{"session":"t"}}`, "spec.session", "session is immutable"},
			{`{"spec":{"session":null}}`, "spec.session", "session is immutable"},
			{`{"spec":{"continue":true}}`, "spec.continue", "continue is immutable"},
			{`{"spec":{"drill":{"scenario":"healthy"}}}`, "spec.drill", "drill is immutable"},
		} {
			err := k8s.Patch(context.Background(), run.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(c.patch)))
			if !apierrors.IsInvalid(err) {
				t.Errorf("%s: want Invalid, got %v", c.patch, err)
			} else if e := containsAll(err.Error(), c.field, c.want); e != nil {
				t.Error(e)
			}
		}
		if err := k8s.Patch(context.Background(), run.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))); err != nil {
			t.Errorf("cancel must stay mutable: %v", err)
		}
	})

	t.Run("valid", func(t *testing.T) {
		run := newRun(ns, "good", func(r *twv1.AgentRun) {
			r.Spec.Guards = &twv1.Guards{StallTimeout: ptr.To("1h30m"), MaxCostUSD: ptr.To("5.00"), WorldTools: []string{"run_tests"}}
			r.Spec.AgentContainer = "agent"
			r.Spec.Session, r.Spec.Continue = "s", true
			r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](2), Classes: []twv1.FaultClass{twv1.ClassRunaway}}
			r.Spec.Model = &twv1.Model{Gateway: &twv1.ModelGateway{Upstream: "https://llm.internal.example:8443/anthropic", KeySecretRef: twv1.SecretKeyRef{Name: "anthropic", Key: "api-key"}}}
		})
		if err := k8s.Create(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		codex := newRun(ns, "good-codex-drill", func(r *twv1.AgentRun) {
			r.Spec.Format, r.Spec.Drill = twv1.FormatCodex, &twv1.Drill{Scenario: "identicalLoop"}
			r.Spec.Template.Spec.Containers[0].Args = []string{`exec codex exec -c "model_providers.turnwatch.base_url=$OPENAI_BASE_URL"`}
		})
		if err := k8s.Create(context.Background(), codex); err != nil {
			t.Errorf("a codex drill whose template reads OPENAI_BASE_URL: %v", err)
		}
		if got, _ := getRun(ns, "good"); got.Spec.Format != twv1.FormatClaude {
			t.Errorf("format %q", got.Spec.Format)
		}
	})
}

// The Pod: rendered from the template, the sidecar a native sidecar holding
// the only API credential, the env of the protocol, and the sidecar's RBAC.
func TestPodShape(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	cfg := shared.DefaultConfig()
	cfg.Prices = json.RawMessage(`{"claude-sonnet-4":{"input":"3","output":"15"}}`)
	startManager(t, ns, managerOpts{config: cfg})
	create(t, newRun(ns, "shape", func(r *twv1.AgentRun) {
		r.Spec.Template.Labels = map[string]string{"team": "a"}
		r.Spec.Template.Spec.Containers = append(r.Spec.Template.Spec.Containers, corev1.Container{Name: "helper", Image: "helper:test"})
		r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](10), MaxCostUSD: ptr.To("2.50")}
	}))
	pod := waitPod(t, ns, "shape-0")
	turn, _ := getTurn(ns, "shape-0")

	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("restartPolicy %s automount %v", spec.RestartPolicy, spec.AutomountServiceAccountToken)
	}
	if spec.ServiceAccountName != render.SidecarServiceAccount {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	if !metav1.IsControlledBy(pod, turn) {
		t.Errorf("pod owners %v", pod.OwnerReferences)
	}
	if pod.Labels["team"] != "a" || pod.Labels[twv1.LabelRun] != "shape" || pod.Labels[twv1.LabelAttempt] != "0" {
		t.Errorf("labels %v", pod.Labels)
	}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == render.TokenMountPath || m.Name == render.TokenVolume || m.Name == render.StateVolume {
				t.Errorf("container %s mounts the token or the sidecar's state", c.Name)
			}
		}
	}
	agent := envOf(spec.Containers[0])
	want := map[string]string{
		protocol.EnvPrompt: "fix the failing test in ./pkg/foo", protocol.EnvConversationID: turn.Spec.ConversationID,
		protocol.EnvContinue: "false", protocol.EnvAttempt: "0",
	}
	for k, v := range want {
		if agent[k] != v {
			t.Errorf("agent env %s = %q, want %q", k, agent[k], v)
		}
	}
	if len(envOf(spec.Containers[1])) != 0 {
		t.Errorf("the helper container got turnwatch env")
	}

	if len(spec.InitContainers) != 1 {
		t.Fatalf("init containers %v", spec.InitContainers)
	}
	sc := spec.InitContainers[0]
	if sc.Name != protocol.SidecarContainerName || sc.RestartPolicy == nil || *sc.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar %s restartPolicy %v", sc.Name, sc.RestartPolicy)
	}
	if sc.Image != "turnwatch-sidecar:test" || !slices.Equal(sc.Command, []string{"turnwatch-sidecar", "run"}) {
		t.Errorf("sidecar image %s command %v", sc.Image, sc.Command)
	}
	if len(sc.VolumeMounts) != 2 || sc.VolumeMounts[0].MountPath != render.TokenMountPath || !sc.VolumeMounts[0].ReadOnly ||
		sc.VolumeMounts[1].Name != render.StateVolume || envOf(sc)[protocol.EnvStateDir] != sc.VolumeMounts[1].MountPath {
		t.Errorf("sidecar mounts %v", sc.VolumeMounts)
	}
	env := envOf(sc)
	var guards map[string]any
	if err := json.Unmarshal([]byte(env[protocol.EnvGuards]), &guards); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"stepBudget": 10.0, "identicalCalls": 4.0, "silentTurns": 12.0, "stallTimeout": "10m",
		"toolTimeout": "30m", "whitespaceDeltas": 128.0, "whitespaceBytes": 8192.0, "maxCostUSD": "2.50",
		"cycleRepeats": 0.0, "errorRepeats": 6.0, "repeatedTextBytes": 4096.0, "answerAware": false} {
		if guards[k] != v {
			t.Errorf("guards.%s = %v, want %v", k, guards[k], v)
		}
	}
	if env[protocol.EnvFormat] != "claude" || env[protocol.EnvAgentContainer] != "agent" ||
		env[protocol.EnvPrices] != string(cfg.Prices) || env[protocol.EnvPriorCostUSD] != "0.00" {
		t.Errorf("sidecar env %v", env)
	}
	for _, e := range sc.Env {
		if e.Name == protocol.EnvPodName && (e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name") {
			t.Errorf("pod name env %+v", e)
		}
	}
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == render.TokenVolume {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil || len(vol.Projected.Sources) != 3 || vol.Projected.Sources[0].ServiceAccountToken == nil {
		t.Fatalf("token volume %+v", vol)
	}

	rb := &rbacv1.RoleBinding{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: render.SidecarServiceAccount}, rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != agentturn.SidecarClusterRole || rb.Labels[agentturn.LabelComponent] != agentturn.ComponentSidecarRBAC {
		t.Errorf("sidecar RoleBinding %+v %v", rb.RoleRef, rb.Labels)
	}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: render.SidecarServiceAccount}, &corev1.ServiceAccount{}); err != nil {
		t.Error(err)
	}
	if sc.SecurityContext == nil || sc.SecurityContext.RunAsUser == nil || *sc.SecurityContext.RunAsUser != protocol.SidecarUID {
		t.Errorf("sidecar security context %+v", sc.SecurityContext)
	}
}
