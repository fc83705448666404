package sidecar

import (
	"fmt"
	"strings"
)

// Claude stream-json lines, shaped like the recorded sessions in
// pkg/monitor/testdata/corpus/claude, for scripting turns in tests.
const claudeModel = `"model":"claude-sonnet-4-5-20250929"`

func claudeInit() string {
	return `{"type":"system","subtype":"init","session_id":"s1",` + claudeModel + `}`
}

// claudeToolCall is one tool-only model message and the tool's answer.
func claudeToolCall(i int, command string) []string {
	return []string{
		fmt.Sprintf(`{"type":"assistant","message":{"id":"msg_%d","type":"message","role":"assistant",%s,"content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":%q}}],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":10}}}`, i, claudeModel, i, command),
		fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"ok","is_error":false}]}}`, i),
	}
}

// claudeSay is a model message that speaks, with its stop reason.
func claudeSay(id, text, stop string) string {
	return fmt.Sprintf(`{"type":"assistant","message":{"id":"%s","type":"message","role":"assistant",%s,"content":[{"type":"text","text":%q}],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":10}}}`, id, claudeModel, text, stop)
}

func claudeResult() string {
	return `{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.01}`
}

// Scripted turns.
func loopTurn(calls int) []string { // the same call again and again
	out := []string{claudeInit()}
	for i := range calls {
		out = append(out, claudeToolCall(i, "grep -r TODO .")...)
	}
	return append(out, claudeSay("msg_end", "done", "end_turn"), claudeResult())
}

func silentTurn(calls int, end bool) []string { // works without a word
	out := []string{claudeInit()}
	for i := range calls {
		out = append(out, claudeToolCall(i, fmt.Sprintf("sed -n %dp main.go", i))...)
	}
	if end {
		out = append(out, claudeSay("msg_end", "done", "end_turn"), claudeResult())
	}
	return out
}

func healthyTurn() []string {
	out := []string{claudeInit()}
	out = append(out, claudeToolCall(1, "ls")...)
	return append(out, claudeSay("msg_end", "I see README.md.", "end_turn"), claudeResult())
}

func lengthTurn() []string {
	return []string{claudeInit(), claudeSay("msg_1", strings.Repeat("word ", 20), "max_tokens")}
}
