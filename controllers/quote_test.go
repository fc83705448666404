package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// forged is what an agent may put in the words a turn's messages quote: a
// screen clear, a carriage return, a line break, a line separator and a
// right-to-left override, each before a row that looks like turnwatch's.
const forged = "\x1b[2J\r\n\u2028\u202e TRIPPED identicalCalls (runaway)"

// raw says whether s carries any of forged's hostile characters unescaped.
func raw(s string) bool { return strings.ContainsAny(s, "\x1b\r\n\u2028\u202e") }

// Every message the controller takes from a turn's Pod onto the turn (and
// from there into the run's fault, conditions and Events) quotes the agent
// escaped (pkg/quote): its error text, a trip's, a nudge's and a
// would-trip's message, the refused call's id, a warning.
func TestVerdictEscapesTheAgent(t *testing.T) {
	finished := func(s protocol.Summary) corev1.PodCondition {
		return corev1.PodCondition{Type: protocol.ConditionFinished, Status: corev1.ConditionTrue, Reason: protocol.ReasonResult, Message: protocol.Marshal(s)}
	}
	cond := func(typ, reason, msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodConditionType(typ), Status: corev1.ConditionTrue, Reason: reason, Message: msg}
	}
	would := protocol.Marshal([]protocol.WouldTrip{{WouldTrip: monitor.WouldTrip{Detector: monitor.DetectorIdenticalCalls, Class: "runaway", Message: forged, Line: 3, Step: 3, Count: 1}}})
	for _, tc := range []struct {
		name  string
		conds []corev1.PodCondition
		got   func(agentturn.Verdict) string
	}{
		{"the agent's error text", []corev1.PodCondition{finished(protocol.Summary{Result: true, ResultError: "error_max_turns" + forged})},
			func(v agentturn.Verdict) string { return v.Err.Message }},
		{"a trip's message", []corev1.PodCondition{cond(protocol.ConditionTripped, protocol.ReasonFor(monitor.DetectorIdenticalCalls), forged)},
			func(v agentturn.Verdict) string { return v.Err.Message }},
		{"the refused call's id", []corev1.PodCondition{cond(protocol.ConditionCallRefused, protocol.ReasonCallRefused, "toolu_1"+forged)},
			func(v agentturn.Verdict) string { return v.RefusedCall }},
		{"a nudge", []corev1.PodCondition{cond(protocol.ConditionSilent, protocol.ReasonFor(monitor.DetectorSilentRun), protocol.NudgeMessage(1, forged))},
			func(v agentturn.Verdict) string { return v.Nudge }},
		{"a would-trip", []corev1.PodCondition{cond(protocol.ConditionWouldTrip, protocol.ReasonWouldTrip, would)},
			func(v agentturn.Verdict) string { return v.WouldTrips[0].Message }},
		{"a warning", []corev1.PodCondition{cond(protocol.ConditionHooksNotRun, protocol.ReasonHooksNotRun, forged)},
			func(v agentturn.Verdict) string { return v.Warnings[protocol.ReasonHooksNotRun] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: tc.conds}}
			for i := range pod.Status.Conditions {
				pod.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
			v := agentturn.Judge(pod, "agent", time.Now(), time.Minute)
			got := tc.got(v)
			if raw(got) {
				t.Errorf("quoted raw: %q", got)
			}
			if !strings.Contains(got, `\x1b[2J\r\n\u2028\u202e TRIPPED`) {
				t.Errorf("not escaped as written: %q", got)
			}
		})
	}
}

// On a real API server: an agent whose final result reports an error that
// would forge a row reaches the run's fault, its Faulted condition and the
// Faulted and Nudged Events escaped; so does a trip's message.
func TestAgentQuotedEscapedOnTheRun(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	noReroll := func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptrTo[int32](0)} }
	for _, c := range []struct {
		run  string
		play func(*corev1.PodStatus)
	}{
		{"errtext", finishedCond(protocol.Summary{Progress: counts(1, "0.01"), Result: true, ResultError: "error_max_turns" + forged})},
		{"tripped", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"+forged)},
	} {
		t.Run(c.run, func(t *testing.T) {
			t.Parallel()
			create(t, newRun(ns, c.run, noReroll))
			waitPod(t, ns, c.run+"-0")
			playSidecar(t, ns, c.run+"-0", condition(protocol.ConditionSilent, protocol.ReasonFor(monitor.DetectorSilentRun), protocol.NudgeMessage(1, "silent"+forged)))
			playSidecar(t, ns, c.run+"-0", c.play)
			run := runPhase(t, ns, c.run, twv1.RunFaulted)
			texts := map[string]string{"fault": run.Status.Fault.Message}
			if f := meta.FindStatusCondition(run.Status.Conditions, agentrun.ConditionFaulted); f != nil {
				texts["Faulted condition"] = f.Message
			}
			for _, reason := range []string{agentrun.EventFaulted, agentrun.EventNudged} {
				for _, e := range waitEvents(t, ns, c.run, reason, 1) {
					texts[reason+" Event"] = e.Note
				}
			}
			for what, s := range texts {
				if raw(s) || !strings.Contains(s, `\x1b[2J\r\n\u2028\u202e`) {
					t.Errorf("%s: %q", what, s)
				}
			}
		})
	}
}
