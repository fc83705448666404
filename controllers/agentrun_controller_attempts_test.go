package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// attempts is a high-water mark while the run runs too: a settled turn
// deleted under a running run keeps counting (attempts, steps, cost), is not
// made again, and does not make the policy see one attempt fewer.
func TestDeletedSettledTurnCounts(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "hw"))
	waitPod(t, ns, "hw-0")
	playSidecar(t, ns, "hw-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":4,"costUSD":"0.02463"}`))
	playSidecar(t, ns, "hw-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	waitPod(t, ns, "hw-1")
	turn, err := getTurn(ns, "hw-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
	consistently(t, "the deleted turn still counts", 1500*time.Millisecond, func() error {
		run, err := getRun(ns, "hw")
		if err != nil {
			return err
		}
		if st := run.Status; st.Phase != twv1.RunRunning || st.Attempts != 2 || st.CostUSD != "0.02463" || st.Steps != 4 {
			return fmt.Errorf("status %+v", st)
		}
		if names, _ := turnNames(ns, "hw"); len(names) != 1 || names[0] != "hw-1" {
			return fmt.Errorf("turns %v, want hw-1 alone", names)
		}
		return nil
	})
	// The second trip exhausts the policy (one reroll): the deleted turn
	// was the first attempt.
	playSidecar(t, ns, "hw-1", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	run := runPhase(t, ns, "hw", twv1.RunFaulted)
	if run.Status.Attempts != 2 || len(run.Status.Turns) != 2 {
		t.Errorf("attempts %d, turns %d, want 2 and 2", run.Status.Attempts, len(run.Status.Turns))
	}
}
