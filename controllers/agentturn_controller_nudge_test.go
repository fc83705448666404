package controllers

import (
	"fmt"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Every nudge is told: one Nudged Event per streak, saying which; a streak
// the controller did not see on the Pod (the next one replaced it) is told
// by its number.
func TestNudgeEveryStreak(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "ns"))
	waitPod(t, ns, "ns-0")
	const text = "13 tool-only model messages since the agent last spoke"
	silent := func(streak int) {
		playSidecar(t, ns, "ns-0", condition(protocol.ConditionSilent, "SilentRun", protocol.NudgeMessage(streak, text)))
	}
	silent(1)
	waitEvents(t, ns, "ns", agentrun.EventNudged, 1)
	silent(2)
	waitEvents(t, ns, "ns", agentrun.EventNudged, 2)
	silent(4) // streak 3 came and went unseen
	evs := waitEvents(t, ns, "ns", agentrun.EventNudged, 4)
	notes := map[string]bool{}
	for _, e := range evs {
		notes[e.Note] = true
	}
	for _, want := range []string{
		"turn ns-0: nudge, streak 1: " + text,
		"turn ns-0: nudge, streak 2: " + text,
		"turn ns-0: nudge, streak 3",
		"turn ns-0: nudge, streak 4: " + text,
	} {
		if !notes[want] {
			t.Errorf("no Nudged event %q in %v", want, notes)
		}
	}
	consistently(t, "four streaks, four events", 700*time.Millisecond, func() error {
		if evs, _ := runEvents(ns, "ns", agentrun.EventNudged); len(evs) != 4 {
			return fmt.Errorf("%d Nudged events", len(evs))
		}
		return nil
	})
	if turn, _ := getTurn(ns, "ns-0"); turn.Status.Nudges != 4 || turn.Status.Outcome != "" {
		t.Errorf("turn %+v", turn.Status)
	}
}
