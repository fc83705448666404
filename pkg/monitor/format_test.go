package monitor

import (
	"testing"
	"time"
)

// claude with --include-partial-messages: stream_event lines interleave
// with the assistant lines of the same message id. A step counts at the
// content_block_start that first shows its id; the identity is compared
// at the assistant line (complete input); one message id is one message;
// usage from message_start/message_delta prices it until the result's
// total_cost_usd replaces the estimate.
func TestClaudePartialMessages(t *testing.T) {
	ev := func(e string) string {
		return `{"type":"stream_event","event":` + e + `,"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`
	}
	lines := []string{
		cInit(),
		ev(`{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}}}`),
		ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll look."}}`),
		ev(`{"type":"content_block_stop","index":0}`),
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I'll look."}],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}},"session_id":"s"}`,
		ev(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`),
		ev(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}}`),
		ev(`{"type":"content_block_stop","index":1}`),
		`{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}},"session_id":"s"}`,
		ev(`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":50}}`),
		ev(`{"type":"message_stop"}`),
		cToolResult("toolu_1", false),
		`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.0042,"session_id":"s"}`,
	}
	e, _ := New(Options{Format: FormatClaude})
	steps := map[int]int{6: 0, 7: 1, 10: 1, 14: 1}
	outstanding := map[int]int{7: 0, 10: 1, 13: 0}
	cost := map[int]string{2: "0.000315", 11: "0.00105", 14: "0.0042"}
	for i, l := range lines {
		n := i + 1
		e.Feed([]byte(l), time.Time{})
		st := e.State()
		if want, ok := steps[n]; ok && st.Steps != want {
			t.Errorf("after line %d: steps %d, want %d", n, st.Steps, want)
		}
		if want, ok := outstanding[n]; ok && st.Outstanding != want {
			t.Errorf("after line %d: outstanding %d, want %d", n, st.Outstanding, want)
		}
		if want, ok := cost[n]; ok && st.Cost.String() != want {
			t.Errorf("after line %d: cost %s, want %s", n, st.Cost, want)
		}
	}
	e.Finish()
	r := e.Report()
	if r.Unparsed != 0 || !r.Result || len(r.Nudges) != 0 {
		t.Fatalf("report %s", js(r))
	}
}

// auto decides on the first line a format claims and sticks to it.
func TestAutoDetect(t *testing.T) {
	tests := map[string]string{
		`{"type":"agent_start"}`:                                                                    FormatPi,
		`{"type":"system","subtype":"init"}`:                                                        FormatClaude,
		`{"type":"thread.started","thread_id":"x"}`:                                                 FormatCodex,
		`{"type":"step_start","part":{}}`:                                                           FormatOpencode,
		`{"type":"tool_use","part":{"callID":"c"}}`:                                                 FormatOpencode,
		`{"type":"tool_use","tool_name":"x","tool_id":"y"}`:                                         FormatGemini,
		`{"type":"result","subtype":"success"}`:                                                     FormatClaude,
		`{"type":"result","status":"success"}`:                                                      FormatGemini,
		`{"type":"init","session_id":"s","model":"m"}`:                                              FormatGemini,
		`{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`: FormatPi,
		`{"type":"response","command":"prompt","success":true}`:                                     FormatPi,
		`{"type":"rate_limit_event","rate_limit_info":{}}`:                                          FormatClaude,
		`{"type":"session.created","session_id":"x"}`:                                               FormatCodex,
	}
	for line, want := range tests {
		r := replayLines(t, FormatAuto, DefaultGuards(), []string{"a banner line", `{"type":"error","message":"x"}`, line})
		if r.Format != want || r.Unparsed != 2 {
			t.Errorf("%s: format %s unparsed %d, want %s 2", line, r.Format, r.Unparsed, want)
		}
	}
	if r := replayLines(t, FormatAuto, DefaultGuards(), []string{"x"}); r.Format != FormatAuto {
		t.Errorf("undecided: %s", r.Format)
	}
}

// Lines that are not whole JSON objects of a known shape are unparsed:
// truncated lines, binary bytes, unknown event types; blank lines are not
// counted; other formats' lines are not this format's.
func TestUnparsedLines(t *testing.T) {
	tests := []struct {
		format string
		line   string
		want   int
	}{
		{FormatPi, `{"type":"agent_start"}`, 0},
		{FormatPi, `{"type":"agent_start"`, 1},
		{FormatPi, `{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"ab`, 1},
		{FormatPi, `{"type":"agent_start"} trailing`, 1},
		{FormatPi, `{"type":"some_future_event"}`, 1},
		{FormatPi, "\x00\x01\xff\xfe", 1},
		{FormatPi, `[1,2,3]`, 1},
		{FormatPi, `   `, 0},
		{FormatPi, `{"session":"x","type":"agent_start"}`, 0}, // type not first
		{FormatPi, `{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"x"}}`, 1},
		{FormatCodex, `{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"x"}}`, 0},
		{FormatAuto, `not json at all`, 1},
		{FormatAuto, `{"type":"error","message":"x"}`, 1}, // decides no format
	}
	for _, tt := range tests {
		r := replayLines(t, tt.format, DefaultGuards(), []string{tt.line})
		if r.Unparsed != tt.want || r.Lines != 1 {
			t.Errorf("%s %q: unparsed %d lines %d, want %d 1", tt.format, tt.line, r.Unparsed, r.Lines, tt.want)
		}
	}
}
