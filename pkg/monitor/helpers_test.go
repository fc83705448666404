package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// replayLines runs an engine over lines (no clock) and returns its report.
func replayLines(t testing.TB, format string, g Guards, lines []string) Report {
	t.Helper()
	e, err := New(Options{Format: format, Guards: g})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		e.Feed([]byte(l), time.Time{})
	}
	e.Finish()
	return e.Report()
}

// guards returns DefaultGuards changed by f.
func guards(f func(*Guards)) Guards {
	g := DefaultGuards()
	if f != nil {
		f(&g)
	}
	return g
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// stream builds realistic lines of one format, numbering ids.
type stream struct {
	lines []string
	n     int
}

func (s *stream) add(l ...string) *stream { s.lines = append(s.lines, l...); return s }
func (s *stream) id(p string) string      { s.n++; return fmt.Sprintf("%s_%04d", p, s.n) }
func (s *stream) len() int                { return len(s.lines) }

// --- pi --mode json ---

func piMsg(content []any, cost float64, stop string) map[string]any {
	return map[string]any{"role": "assistant", "content": content, "api": "openai-responses",
		"provider": "openai", "model": "gpt-5.1-codex",
		"usage": map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}},
		"stopReason": stop, "timestamp": 1767401001200}
}

func piCall(id, name string, args any) map[string]any {
	return map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}
}

func piText(t string) map[string]any { return map[string]any{"type": "text", "text": t} }

// piToolOnly appends one tool-only model message whose calls run, each
// answered (isError per errs).
func (s *stream) piToolOnly(name string, args any, isError bool) string {
	id := s.id("call")
	m := piMsg([]any{piCall(id, name, args)}, 0, "toolUse")
	s.add(js(map[string]any{"type": "message_start", "message": m}),
		js(map[string]any{"type": "message_end", "message": m}),
		js(map[string]any{"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": args}),
		js(map[string]any{"type": "tool_execution_end", "toolCallId": id, "toolName": name,
			"result": map[string]any{"content": []any{piText("ok")}}, "isError": isError}))
	return id
}

// piSpeak appends a model message with text only.
func (s *stream) piSpeak(text string) {
	m := piMsg([]any{piText(text)}, 0, "stop")
	s.add(js(map[string]any{"type": "message_start", "message": m}), js(map[string]any{"type": "message_end", "message": m}))
}

// piDelta appends a message_update carrying one delta (kind text or thinking).
func (s *stream) piDelta(kind, delta string, cost float64) {
	field := kind
	m := piMsg([]any{map[string]any{"type": kind, kind: delta}}, cost, "stop")
	s.add(js(map[string]any{"type": "message_update", "message": m,
		"assistantMessageEvent": map[string]any{"type": field + "_delta", "contentIndex": 0, "delta": delta, "partial": m}}))
}

// --- claude -p --output-format stream-json --verbose ---

func cAssistant(id string, content []any, stop any) string {
	return js(map[string]any{"type": "assistant", "session_id": "s", "parent_tool_use_id": nil,
		"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20}}})
}

func cToolResult(id string, isError bool) string {
	return js(map[string]any{"type": "user", "session_id": "s", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": "out", "is_error": isError}}}})
}

// claudeToolOnly appends one tool-only message with one call and its result.
func (s *stream) claudeToolOnly(name string, input any, isError bool) {
	msg, call := s.id("msg"), s.id("toolu")
	s.add(cAssistant(msg, []any{map[string]any{"type": "tool_use", "id": call, "name": name, "input": input}}, "tool_use"),
		cToolResult(call, isError))
}

func (s *stream) claudeSpeak(text string) {
	s.add(cAssistant(s.id("msg"), []any{map[string]any{"type": "text", "text": text}}, "end_turn"))
}

func cInit() string {
	return js(map[string]any{"type": "system", "subtype": "init", "session_id": "s", "model": "claude-sonnet-4-5-20250929", "tools": []string{"Bash"}})
}

func cResult(cost float64) string {
	return js(map[string]any{"type": "result", "subtype": "success", "is_error": false, "total_cost_usd": cost, "session_id": "s"})
}

// lineOf returns the 1-based number of the first line containing sub,
// searching from line from (1-based).
func lineOf(lines []string, sub string, from int) int {
	for i := from - 1; i < len(lines); i++ {
		if strings.Contains(lines[i], sub) {
			return i + 1
		}
	}
	return -1
}

// recordedLines are the lines of a recording, for the tests that read one
// with encoding/json (a check independent of the scanner).
func recordedLines(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}
