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

func TestNudgeDelivery(t *testing.T) {
	for _, c := range []struct {
		msg              string
		delivered, known bool
	}{
		{"streak 1: 12 tool calls without a word [delivered to the agent]", true, true},
		{"streak 1: warning (identicalCalls): same call [not delivered to the agent: no hook acknowledged it by the second tool call after it]", false, true},
		{"streak 2: 12 tool calls without a word", false, false},
		{"", false, false},
	} {
		if d, k := NudgeDelivery(c.msg); d != c.delivered || k != c.known {
			t.Errorf("%q: %v %v, want %v %v", c.msg, d, k, c.delivered, c.known)
		}
	}
}
