package controllers

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Runs of one session run one at a time, in creation order; a waiting run
// is Pending with a Waiting condition naming the run it waits for, and
// starts once that run finished. The first continue of a new session starts
// fresh; the next one resumes what the first one ran.
func TestSessionOneAtATime(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	inSession := func(r *twv1.AgentRun) { r.Spec.Session, r.Spec.Continue = "pair", true }

	create(t, newRun(ns, "s1", inSession))
	waitPod(t, ns, "s1-0")
	create(t, newRun(ns, "s2", inSession))
	create(t, newRun(ns, "s3", inSession))
	for _, name := range []string{"s2", "s3"} {
		eventually(t, name+" waits", func() error {
			run, err := getRun(ns, name)
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionWaiting)
			if run.Status.Phase != twv1.RunPending || c == nil || c.Reason != agentrun.ReasonSessionBusy {
				return fmt.Errorf("phase %s waiting %+v", run.Status.Phase, c)
			}
			// s3 waits for the earliest unfinished run: s1, then s2.
			return containsAll(c.Message, "s1", "pair")
		})
	}
	consistently(t, "only s1 runs", time.Second, func() error {
		for _, name := range []string{"s2", "s3"} {
			if n, _ := turnNames(ns, name); len(n) != 0 {
				return fmt.Errorf("%s has turns %v", name, n)
			}
		}
		return nil
	})
	s1, _ := getTurn(ns, "s1-0")
	if s1.Spec.Continue {
		t.Errorf("the first continue of a new session resumes %s, which never existed", s1.Spec.ConversationID)
	}

	// The CLI's own session id, as the sidecar read it from s1's stream,
	// is recorded on s1's turn and handed to s2's agent to resume.
	const cliSession = "0f3c2a9e-cli-own-session"
	playSidecar(t, ns, "s1-0", finishedCond(protocol.Summary{Progress: counts(2, "0.01"), StopReason: "end", Result: true, AgentSessionID: cliSession}))
	runPhase(t, ns, "s1", twv1.RunSucceeded)
	if s1, _ = getTurn(ns, "s1-0"); s1.Status.AgentSessionID != cliSession {
		t.Errorf("s1-0 status.agentSessionID = %q, want %q", s1.Status.AgentSessionID, cliSession)
	}
	pod := waitPod(t, ns, "s2-0")
	s2, _ := getTurn(ns, "s2-0")
	if !s2.Spec.Continue || s2.Spec.ConversationID != s1.Spec.ConversationID || s2.Spec.AgentSessionID != cliSession {
		t.Errorf("s2 continue %v conversation %s agent session %q, want s1's %s and %q resumed",
			s2.Spec.Continue, s2.Spec.ConversationID, s2.Spec.AgentSessionID, s1.Spec.ConversationID, cliSession)
	}
	if got := envOf(pod.Spec.Containers[0])[protocol.EnvAgentSessionID]; got != cliSession {
		t.Errorf("s2-0's agent gets %s=%q, want %q", protocol.EnvAgentSessionID, got, cliSession)
	}
	eventually(t, "s3 now waits for s2", func() error {
		run, err := getRun(ns, "s3")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionWaiting)
		if c == nil {
			return fmt.Errorf("no Waiting condition: %+v", run.Status)
		}
		return containsAll(c.Message, "s2")
	})
	if n, _ := turnNames(ns, "s3"); len(n) != 0 {
		t.Fatalf("s3 started while s2 runs: %v", n)
	}
	// Cancelling the waiting run aborts it without a turn.
	edit(t, ns, "s3", func(r *twv1.AgentRun) { r.Spec.Cancel = true })
	run := runPhase(t, ns, "s3", twv1.RunAborted)
	if c := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionWaiting); c != nil {
		t.Errorf("an aborted run still waits: %+v", c)
	}
}
