package controllers

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The verdict rules of issue 8 on a real API server: the agent's own
// failure settles agent-error (retried once, then fault), and a sidecar that
// gives up settles infra with its reason and stops the agent.
func TestVerdictAgentErrorAndSidecarFailure(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})

	t.Run("agent-error retried once, then fault", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "maxturns"))
		for _, pod := range []string{"maxturns-0", "maxturns-1"} {
			waitPod(t, ns, pod)
			playSidecar(t, ns, pod, finishedCond(protocol.Summary{Progress: counts(3, "0.02"), Result: true, ResultError: "error_max_turns"}))
			turn := turnSettled(t, ns, pod)
			want := twv1.TurnError{Type: twv1.ClassAgentError, Message: "error_max_turns"}
			if turn.Status.Outcome != twv1.TurnFailed || turn.Status.Error == nil || *turn.Status.Error != want {
				t.Fatalf("turn %s: %s %+v, want Failed %+v", pod, turn.Status.Outcome, turn.Status.Error, want)
			}
			podStopped(t, ns, pod)
		}
		run := runPhase(t, ns, "maxturns", twv1.RunFaulted)
		if f := run.Status.Fault; f == nil || f.Class != twv1.ClassAgentError || f.Message != "error_max_turns" || run.Status.Attempts != 2 {
			t.Errorf("fault %+v after %d attempts", f, run.Status.Attempts)
		}
		for _, c := range run.Status.Conditions {
			if c.Type == agentrun.ConditionFaulted && (c.Status != metav1.ConditionTrue || c.Reason != "AgentError") {
				t.Errorf("Faulted %+v", c)
			}
		}
	})

	t.Run("sidecar gives up: infra with its reason", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "refused", func(r *twv1.AgentRun) {
			r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)}
		}))
		waitPod(t, ns, "refused-0")
		playSidecar(t, ns, "refused-0", condition(protocol.ConditionFailed, protocol.ReasonLogForbidden,
			`opening the log: pods "refused-0" is forbidden: User "system:serviceaccount:x:y" cannot get resource "pods/log"`))
		podStopped(t, ns, "refused-0")
		turn := turnSettled(t, ns, "refused-0")
		if turn.Status.Error == nil || turn.Status.Error.Type != twv1.ClassInfra {
			t.Fatalf("turn: %+v", turn.Status)
		}
		if err := containsAll(turn.Status.Error.Message, "LogForbidden", "pods/log"); err != nil {
			t.Error(err)
		}
		runPhase(t, ns, "refused", twv1.RunFaulted)
	})

	t.Run("sidecar gives up without the Pod's status: its termination message", func(t *testing.T) {
		t.Parallel()
		create(t, newRun(ns, "nostatus", func(r *twv1.AgentRun) {
			r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)}
		}))
		waitPod(t, ns, "nostatus-0")
		playSidecar(t, ns, "nostatus-0", func(s *corev1.PodStatus) {
			s.Phase = corev1.PodRunning
			s.InitContainerStatuses = []corev1.ContainerStatus{{Name: protocol.SidecarContainerName, Image: "sidecar:test",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					Message: `PodForbidden: reading the own Pod: pods "nostatus-0" is forbidden`, FinishedAt: metav1.Now()}}}}
		})
		podStopped(t, ns, "nostatus-0")
		turn := turnSettled(t, ns, "nostatus-0")
		if turn.Status.Error == nil || turn.Status.Error.Type != twv1.ClassInfra {
			t.Fatalf("turn: %+v", turn.Status)
		}
		if err := containsAll(turn.Status.Error.Message, "PodForbidden", "is forbidden"); err != nil {
			t.Error(err)
		}
	})
}

// A summary the drain cut short is not taken as "no result": the controller
// reads the log's tail, and a final result there settles the turn.
func TestVerdictReadsTheTail(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	tails := map[string]string{
		"cut-0":   `{"type":"result","subtype":"success","is_error":false,"result":"done"}` + "\n",
		"empty-0": `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}` + "\n",
	}
	var asked sync.Map
	startManager(t, ns, managerOpts{logTail: func(_ context.Context, namespace, pod, container string, lines int64) (io.ReadCloser, error) {
		asked.Store(pod, container)
		return io.NopCloser(strings.NewReader(tails[pod])), nil
	}})
	for _, c := range []struct {
		run     string
		outcome twv1.TurnOutcome
	}{{"cut", twv1.TurnSucceeded}, {"empty", twv1.TurnFailed}} {
		t.Run(c.run, func(t *testing.T) {
			create(t, newRun(ns, c.run, func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)} }))
			pod := c.run + "-0"
			waitPod(t, ns, pod)
			playSidecar(t, ns, pod, func(s *corev1.PodStatus) {
				finishedCond(protocol.Summary{Progress: counts(1, "0.01"), StopReason: "tool_use", Complete: false})(s)
				agentExited(0, "Completed", corev1.PodSucceeded)(s)
			})
			turn := turnSettled(t, ns, pod)
			if turn.Status.Outcome != c.outcome {
				t.Fatalf("turn %s: %s %+v, want %s", pod, turn.Status.Outcome, turn.Status.Error, c.outcome)
			}
			if c.outcome == twv1.TurnFailed && (turn.Status.Error.Type != twv1.ClassNoSignal || !strings.Contains(turn.Status.Error.Message, "cut short")) {
				t.Errorf("error %+v", turn.Status.Error)
			}
			if got, _ := asked.Load(pod); got != "agent" {
				t.Errorf("tail of %s read from container %v", pod, got)
			}
		})
	}
}
