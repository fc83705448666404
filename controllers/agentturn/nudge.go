package agentturn

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// RecordNudges tells every nudge streak the turn's status counts beyond
// seen: one Nudged Event per streak. The sidecar's Silent condition holds
// the latest streak; one that came and went between two reads is told by
// its number. The Events are about regarding: a run's turn's run, an
// attached Pod's turn itself.
func RecordNudges(rec events.EventRecorder, regarding runtime.Object, turn *twv1.AgentTurn, seen int32, latest string) {
	for n := seen + 1; n <= turn.Status.Nudges; n++ {
		shared.NudgesTotal.Inc()
		rec.Eventf(regarding, turn, corev1.EventTypeNormal, agentrun.EventNudged, nudgeAction(n), "%s", nudgeNote(turn.Name, n, turn.Status.Nudges, latest))
	}
}

// nudgeAction is a Nudged Event's action, one per streak: the events
// library folds Events that share regarding, related, reason and action
// into one series (the note does not count), which would hide every
// streak after the first.
func nudgeAction(streak int32) string {
	if streak == 1 {
		return "Nudge"
	}
	return fmt.Sprintf("NudgeStreak%d", streak)
}

// nudgeNote is a Nudged Event's text: the turn, which streak, and the
// sidecar's message where it is the one on the Pod.
func nudgeNote(turn string, n, latest int32, message string) string {
	if n != latest {
		return fmt.Sprintf("turn %s: nudge, streak %d", turn, n)
	}
	text := message
	if _, rest, ok := strings.Cut(message, ": "); ok && protocol.NudgeStreak(message) == int(n) && strings.HasPrefix(message, "streak ") {
		text = rest
	}
	return fmt.Sprintf("turn %s: nudge, streak %d: %s", turn, n, text)
}
