package protocol

import "testing"

func TestNudgeStreak(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want int
	}{
		{NudgeMessage(1, "13 tool-only model messages"), 1},
		{NudgeMessage(3, "13 tool-only model messages: report"), 3},
		{"13 tool-only model messages since the agent last spoke", 1}, // an older sidecar
		{"streak x: text", 1},
		{"streak 0: text", 1},
	} {
		if got := NudgeStreak(tc.msg); got != tc.want {
			t.Errorf("NudgeStreak(%q) = %d, want %d", tc.msg, got, tc.want)
		}
	}
	if NudgeMessage(1, "a") == NudgeMessage(2, "a") {
		t.Error("two streaks with the same text give the same message")
	}
}
