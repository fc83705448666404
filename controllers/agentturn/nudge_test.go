package agentturn

import (
	"testing"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestNudgeNote(t *testing.T) {
	for _, tc := range []struct {
		n, latest int32
		msg, want string
	}{
		{1, 1, protocol.NudgeMessage(1, "quiet"), "turn t-0: nudge, streak 1: quiet"},
		{1, 2, protocol.NudgeMessage(2, "quiet"), "turn t-0: nudge, streak 1"},
		{1, 1, "an older sidecar's text", "turn t-0: nudge, streak 1: an older sidecar's text"},
	} {
		if got := nudgeNote("t-0", tc.n, tc.latest, tc.msg); got != tc.want {
			t.Errorf("nudgeNote(%d of %d, %q) = %q, want %q", tc.n, tc.latest, tc.msg, got, tc.want)
		}
	}
}
