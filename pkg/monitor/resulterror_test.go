package monitor

import "testing"

// TestResultError: a final result event that reports a failure is still a
// final result, and the report carries the CLI's own error text; a final
// result that succeeds carries none; a start event after a failure clears it.
func TestResultError(t *testing.T) {
	tests := []struct {
		name, format string
		lines        []string
		result       bool
		stop         string
		resultError  string
	}{
		{"claude max turns", FormatClaude, []string{cInit(),
			`{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"total_cost_usd":0.01}`},
			true, "", "error_max_turns"},
		{"claude api error as success subtype", FormatClaude, []string{cInit(),
			`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 {\"type\":\"error\"}","total_cost_usd":0}`},
			true, "", `API Error: 400 {"type":"error"}`},
		{"claude errors list", FormatClaude, []string{
			`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"","errors":["boom","later"]}`},
			true, "", "error_during_execution: boom"},
		{"claude success", FormatClaude, []string{cAssistant("m", []any{}, "end_turn"),
			`{"type":"result","subtype":"success","is_error":false,"result":"done"}`}, true, StopEnd, ""},
		{"claude error then a new session that succeeds", FormatClaude, []string{
			`{"type":"result","subtype":"error_max_turns","is_error":true}`, cInit(), cAssistant("m", []any{}, "end_turn"),
			`{"type":"result","subtype":"success","is_error":false}`}, true, StopEnd, ""},
		{"codex turn.failed", FormatCodex, []string{`{"type":"thread.started","thread_id":"t"}`, `{"type":"turn.started"}`,
			`{"type":"error","message":"unexpected status 400 Bad Request: {\"detail\":\"The 'gpt-9' model is not supported\"}"}`,
			`{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request: {\"detail\":\"The 'gpt-9' model is not supported\"}"}}`},
			true, StopError, `unexpected status 400 Bad Request: {"detail":"The 'gpt-9' model is not supported"}`},
		{"codex turn.failed without text takes the error event's", FormatCodex, []string{`{"type":"turn.started"}`,
			`{"type":"error","message":"stream disconnected"}`, `{"type":"turn.failed","error":{}}`},
			true, StopError, "stream disconnected"},
		{"codex error, then success", FormatCodex, []string{`{"type":"turn.started"}`,
			`{"type":"error","message":"Reconnecting... 1/5"}`, `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`},
			true, "", ""},
		{"gemini error result", FormatGemini, []string{`{"type":"init","model":"gemini-2.5-pro"}`,
			`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"},"stats":{}}`},
			true, StopError, "Reached max session turns"},
		{"gemini error result names the error event", FormatGemini, []string{
			`{"type":"error","severity":"error","message":"quota exceeded"}`, `{"type":"result","status":"error"}`},
			true, StopError, "quota exceeded"},
		{"gemini success", FormatGemini, []string{`{"type":"result","status":"success","stats":{}}`}, true, "", ""},
		{"pi error stop", FormatPi, []string{`{"type":"agent_start"}`,
			`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429 rate limited"}}`,
			`{"type":"agent_end","messages":[]}`}, true, StopError, "429 rate limited"},
		{"pi error, retried, success", FormatPi, []string{`{"type":"agent_start"}`,
			`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429"}}`,
			`{"type":"agent_end","messages":[]}`, `{"type":"auto_retry_start"}`, `{"type":"agent_start"}`,
			`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`,
			`{"type":"agent_end","messages":[]}`}, true, StopEnd, ""},
		{"pi aborted is not an agent error", FormatPi, []string{
			`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"aborted"}}`,
			`{"type":"agent_end","messages":[]}`}, true, StopAborted, ""},
		{"opencode session error", FormatOpencode, []string{`{"type":"step_start","part":{}}`,
			`{"type":"error","error":{"name":"ProviderAuthError","data":{"providerID":"x","message":"invalid key"}}}`},
			true, StopError, "invalid key"},
		{"opencode error without data", FormatOpencode, []string{`{"type":"error","error":{"name":"UnknownError"}}`},
			true, StopError, "UnknownError"},
		{"opencode error, then a new step reopens", FormatOpencode, []string{`{"type":"error","error":{"name":"X"}}`,
			`{"type":"step_start","part":{}}`, `{"type":"step_finish","part":{"reason":"stop"}}`}, true, StopEnd, ""},
		{"escape cut at the bound stays readable", FormatCodex, []string{
			`{"type":"turn.failed","error":{"message":"` + repeat("a", maxErrText-1) + `\n"}}`},
			true, StopError, repeat("a", maxErrText-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if r.Result != tt.result || r.StopReason != tt.stop || r.ResultError != tt.resultError || r.Unparsed != 0 {
				t.Errorf("got result=%v stop=%q resultError=%q unparsed=%d, want result=%v stop=%q resultError=%q",
					r.Result, r.StopReason, r.ResultError, r.Unparsed, tt.result, tt.stop, tt.resultError)
			}
		})
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, n*len(s))
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
