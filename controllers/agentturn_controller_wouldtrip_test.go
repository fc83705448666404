package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func wouldTripsMessage(t time.Time, ws ...monitor.WouldTrip) string {
	first := map[string]time.Time{}
	for _, w := range ws {
		first[w.Detector] = t
	}
	return protocol.Marshal(protocol.WouldTripsOf(ws, first))
}

// A Pod that reports a would-trip (an audited detector): the turn records
// status.wouldTrip, one Normal WouldTrip Event goes out per detector
// however often the count moves, turnwatch_trips_total counts it once with
// mode="audit", nothing stops the agent, and the run settles as the agent
// ends: Succeeded on its result. (The turn's spec.audit reaching the
// sidecar is TestRenderAudit's.)
func TestWouldTripRecorded(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	const det = monitor.DetectorRepeatedErrors // no other test reports it in audit mode
	metric := shared.TripsTotal.WithLabelValues(det, string(twv1.ClassRunaway), "", shared.ModeAudit)
	enforced := shared.TripsTotal.WithLabelValues(det, string(twv1.ClassRunaway), "", shared.ModeEnforce)
	before, beforeEnforced := promtestutil.ToFloat64(metric), promtestutil.ToFloat64(enforced)
	at := time.Now().Truncate(time.Second)
	w := monitor.WouldTrip{Class: monitor.ClassRunaway, Detector: det, Message: "the same tool error 6 times in a row", Line: 30, Step: 7, Count: 1}

	run := newRun(ns, "audited")
	pod := runningRun(t, run)
	playSidecar(t, ns, pod.Name, condition(protocol.ConditionWouldTrip, protocol.ReasonWouldTrip, wouldTripsMessage(at, w)))
	evs := waitEvents(t, ns, run.Name, agentturn.EventWouldTrip, 1)
	if evs[0].Type != corev1.EventTypeNormal || containsAll(evs[0].Note, pod.Name, det, "step 7", w.Message, "goes on") != nil {
		t.Errorf("event %s %q", evs[0].Type, evs[0].Note)
	}
	w.Count = 3
	playSidecar(t, ns, pod.Name, condition(protocol.ConditionWouldTrip, protocol.ReasonWouldTrip, wouldTripsMessage(at, w)))
	eventually(t, "the count follows", func() error {
		turn, err := getTurn(ns, pod.Name)
		if err != nil {
			return err
		}
		if len(turn.Status.WouldTrip) != 1 || turn.Status.WouldTrip[0].Count != 3 {
			return fmt.Errorf("wouldTrip %+v", turn.Status.WouldTrip)
		}
		return nil
	})
	consistently(t, "one Event, the agent runs on", 700*time.Millisecond, func() error {
		if evs, _ := runEvents(ns, run.Name, agentturn.EventWouldTrip); len(evs) != 1 {
			return fmt.Errorf("%d WouldTrip events", len(evs))
		}
		if p, _ := getPod(ns, pod.Name); p.Spec.ActiveDeadlineSeconds != nil {
			return errors.New("a would-trip stopped the agent")
		}
		return nil
	})

	w.Count = 4
	sum := protocol.Summary{Progress: protocol.Progress{Steps: 12}, StopReason: monitor.StopEnd, Result: true, Complete: true,
		WouldTrips: protocol.WouldTripsOf([]monitor.WouldTrip{w}, map[string]time.Time{det: at})}
	playSidecar(t, ns, pod.Name, func(s *corev1.PodStatus) {
		condition(protocol.ConditionWouldTrip, protocol.ReasonWouldTrip, wouldTripsMessage(at, w))(s)
		finishedCond(sum)(s)
	})
	turn := turnSettled(t, ns, pod.Name)
	got := turn.Status.WouldTrip
	if turn.Status.Outcome != twv1.TurnSucceeded || len(got) != 1 || got[0].Detector != det || got[0].Count != 4 || got[0].Step != 7 ||
		got[0].Class != twv1.ClassRunaway || got[0].Message != w.Message || got[0].Time == nil || !got[0].Time.Time.Equal(at) {
		t.Fatalf("turn status %+v", turn.Status)
	}
	runPhase(t, ns, run.Name, twv1.RunSucceeded)
	if d := promtestutil.ToFloat64(metric) - before; d != 1 {
		t.Errorf("turnwatch_trips_total{detector=%q,mode=\"audit\"} rose by %v, want 1", det, d)
	}
	if d := promtestutil.ToFloat64(enforced) - beforeEnforced; d != 0 {
		t.Errorf("turnwatch_trips_total{detector=%q,mode=\"enforce\"} rose by %v, want 0", det, d)
	}
}
