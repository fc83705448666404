package monitor

import (
	"testing"
	"time"
)

var zeroTime time.Time

func TestLengthStopCheck(t *testing.T) {
	for stop, want := range map[string]bool{StopLength: true, StopEnd: false, StopToolUse: false, "": false, StopError: false} {
		reason, _, failed := lengthStop(&State{StopReason: stop})
		if failed != want || failed && reason != DetectorLengthStop {
			t.Errorf("%q: failed=%v, want %v", stop, failed, want)
		}
	}
}

// Stop reasons are read from message end events, never from partials, and
// normalized; the length stop is judged on the last model message at the
// end of input.
func TestStopReasons(t *testing.T) {
	piEnd := func(stop string) string {
		return js(map[string]any{"type": "message_end", "message": piMsg([]any{piText("x")}, 0, stop)})
	}
	piPartial := func(stop string) string {
		m := piMsg([]any{piText("x")}, 0, stop)
		return js(map[string]any{"type": "message_update", "message": m, "assistantMessageEvent": map[string]any{"type": "text_delta", "delta": "x", "partial": m}})
	}
	tests := []struct {
		name, format string
		lines        []string
		stop         string
		trip         bool
	}{
		{"pi stop", FormatPi, []string{piEnd("stop")}, StopEnd, false},
		{"pi toolUse", FormatPi, []string{piEnd("toolUse")}, StopToolUse, false},
		{"pi aborted", FormatPi, []string{piEnd("aborted")}, StopAborted, false},
		{"pi length", FormatPi, []string{piEnd("length")}, StopLength, true},
		{"pi length then stop", FormatPi, []string{piEnd("length"), piEnd("stop")}, StopEnd, false},
		{"pi partial says length, end says stop", FormatPi, []string{piPartial("length"), piEnd("stop")}, StopEnd, false},
		{"pi partial only", FormatPi, []string{piPartial("length")}, "", false},
		{"claude max_tokens", FormatClaude, []string{cAssistant("m", []any{}, "max_tokens")}, StopLength, true},
		{"claude end_turn", FormatClaude, []string{cAssistant("m", []any{}, "end_turn"), cResult(0)}, StopEnd, false},
		{"claude stop_sequence", FormatClaude, []string{cAssistant("m", []any{}, "stop_sequence")}, StopEnd, false},
		{"claude null then set, one id", FormatClaude, []string{cAssistant("m", []any{}, nil), cAssistant("m", []any{}, "max_tokens"), cResult(0)}, StopLength, true},
		{"claude null", FormatClaude, []string{cAssistant("m", []any{}, nil)}, "", false},
		{"opencode length", FormatOpencode, []string{`{"type":"step_finish","part":{"reason":"length"}}`}, StopLength, true},
		{"codex turn.failed", FormatCodex, []string{`{"type":"turn.failed","error":{"message":"x"}}`}, StopError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if r.StopReason != tt.stop {
				t.Errorf("stopReason %q, want %q", r.StopReason, tt.stop)
			}
			if got := len(r.Trips) == 1 && r.Trips[0].Class == ClassLength; got != tt.trip {
				t.Errorf("trips %s, want length trip=%v", js(r.Trips), tt.trip)
			}
		})
	}
}
