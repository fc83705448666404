package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Terminal is terminal across a change of the cluster config: a run that
// faulted under a cluster default of no reroll stays Faulted, with no new
// turn, when the manager comes back with a config that would reroll it
// (the config is a file the manager reads at start, so an edit is a
// restart), and when its spec is edited under that manager.
func TestTerminalAcrossClusterConfig(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	strict := shared.DefaultConfig()
	strict.Rerolls.Max = ptr.To[int32](0)
	first := startManager(t, ns, managerOpts{config: strict})
	create(t, newRun(ns, "cfg"))
	waitPod(t, ns, "cfg-0")
	playSidecar(t, ns, "cfg-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	before := runPhase(t, ns, "cfg", twv1.RunFaulted).Status
	first.stop()

	lenient := shared.DefaultConfig()
	lenient.Rerolls.Max = ptr.To[int32](3)
	startManager(t, ns, managerOpts{config: lenient})
	edit(t, ns, "cfg", func(r *twv1.AgentRun) { r.Annotations = map[string]string{"edited": "after the fault"} })
	consistently(t, "the run stays as it faulted", 2*time.Second, func() error {
		run, err := getRun(ns, "cfg")
		if err != nil {
			return err
		}
		if st := run.Status; st.Phase != twv1.RunFaulted || st.Attempts != before.Attempts || len(st.Turns) != len(before.Turns) {
			return fmt.Errorf("status moved: %+v, was %+v", st, before)
		}
		var list twv1.AgentTurnList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{twv1.LabelRun: "cfg"}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d turns, want the one it had", len(list.Items))
		}
		return nil
	})
}
