package monitor

import (
	"testing"
	"time"
)

// gemini's identical shell call and its answer, numbered by id.
func gCall(id string) []string {
	return []string{
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"` + id + `","parameters":{"command":"cat /etc/os-release"}}`,
		`{"type":"tool_result","tool_id":"` + id + `","status":"success","output":"PRETTY_NAME=Debian"}`,
	}
}

// TestCLIGuard: a CLI's own guard is a failure the agent reports
// (docs/design.md#a-failure-the-agent-reports). Gemini CLI stops its turn for a loop with an error
// notice and then prints a success result: the turn has a result, its
// resultError is the notice's message, its stop reason is error, and the
// notice is not an ignored line (it carried the failure). A notice the
// turn goes on after is only a notice. Claude Code ends a turn that hit the
// token maximum with an is_error result after its own retries.
func TestCLIGuard(t *testing.T) {
	calls := append(gCall("c1"), gCall("c2")...)
	lines := func(l ...[]string) []string {
		var all []string
		for _, x := range l {
			all = append(all, x...)
		}
		return all
	}
	maxTokens := `{"duration_api_ms":1261,"stop_reason":"stop_sequence","session_id":"s","total_cost_usd":0.00056,` +
		`"terminal_reason":"api_error","is_error":true,"num_turns":4,"subtype":"success","api_error":"max_output_tokens",` +
		`"result":"API Error: Claude's response exceeded the 128000 output token maximum.","type":"result"}`
	tests := []struct {
		name, format string
		lines        []string
		stop         string
		resultError  string
		ignored      int
	}{
		{"gemini tool loop", FormatGemini, lines([]string{gInit, gUser}, calls, []string{gLoop, gResult}),
			StopError, "Loop detected, stopping execution", 0},
		{"gemini text loop", FormatGemini, []string{gInit, gUser, gSpeak, gSpeak, gLoop, gResult},
			StopError, "Loop detected, stopping execution", 0},
		{"gemini max session turns", FormatGemini, lines([]string{gInit, gUser}, calls,
			[]string{`{"type":"error","severity":"error","message":"Maximum session turns exceeded"}`, gResult}),
			StopError, "Maximum session turns exceeded", 0},
		{"the last of two notices ends the turn", FormatGemini, []string{gInit, gUser, gBlocked, gLoop, gResult},
			StopError, "Loop detected, stopping execution", 1},
		{"an error result names its own text", FormatGemini, []string{gInit, gUser, gLoop,
			`{"type":"result","status":"error","error":{"type":"INVALID_STREAM","message":"empty response"}}`},
			StopError, "empty response", 0},
		{"the turn went on after the notice", FormatGemini, lines([]string{gInit, gUser, gLoop}, calls, []string{gSpeak, gResult}),
			"", "", 1},
		{"a user message came after the notice", FormatGemini, []string{gInit, gLoop, gUser, gSpeak, gResult}, "", "", 1},
		{"a notice after the result", FormatGemini, []string{gInit, gUser, gSpeak, gResult, gLoop}, "", "", 1},
		{"a new run after the notice", FormatGemini, []string{gInit, gLoop, gInit, gUser, gSpeak, gResult}, "", "", 1},
		{"claude max tokens after its retries", FormatClaude, []string{cInit(),
			cAssistant("m1", []any{map[string]any{"type": "text", "text": "Truncated answ"}}, "max_tokens"), maxTokens},
			StopLength, "API Error: Claude's response exceeded the 128000 output token maximum.", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if !r.Result || r.StopReason != tt.stop || r.ResultError != tt.resultError || r.Ignored != tt.ignored || r.Unparsed != 0 {
				t.Errorf("result %v stop %q resultError %q ignored %d unparsed %d, want true %q %q %d 0",
					r.Result, r.StopReason, r.ResultError, r.Ignored, r.Unparsed, tt.stop, tt.resultError, tt.ignored)
			}
		})
	}
}

// TestCLIGuardCheckpoint: a restart between the notice and the result
// keeps the verdict (the pending notice is part of the checkpoint).
func TestCLIGuardCheckpoint(t *testing.T) {
	lines := append(append([]string{gInit, gUser}, gCall("c1")...), gLoop, gResult)
	want := replayLines(t, FormatGemini, DefaultGuards(), lines)
	a, _ := New(Options{Format: FormatGemini})
	for _, l := range lines[:len(lines)-1] {
		a.Feed([]byte(l), time.Time{})
	}
	cp, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(Options{Format: FormatGemini})
	if err := b.Restore(cp); err != nil {
		t.Fatal(err)
	}
	b.Feed([]byte(lines[len(lines)-1]), time.Time{})
	b.Finish()
	if got := b.Report(); js(got) != js(want) {
		t.Errorf("restored\n got %s\nwant %s", js(got), js(want))
	}
}
