package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// OpenAI Responses: POST /v1/responses, as in OpenAI's API reference
// ("Responses", "Streaming events").
var responsesAPI = dialect{
	api:   APIResponses,
	match: modelapi.Responses.Match,
	parse: parseResponses,
	write: writeResponses,
	fail:  failWith(modelapi.Responses),
	extra: func(http.ResponseWriter, string) bool { return false },
}

type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

func parseResponses(_ string, body []byte) (*Conversation, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	c := &Conversation{Model: req.Model, Stream: req.Stream, System: req.Instructions}
	var items []responsesItem
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		items = []responsesItem{{Type: "message", Role: "user", Content: req.Input}}
	} else if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
	}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			role := it.Role
			if role == "developer" || role == "system" {
				c.System += openAIText(it.Content)
				continue
			}
			if role != "user" {
				role = "assistant"
			}
			c.Messages = append(c.Messages, Message{Role: role, Text: openAIText(it.Content)})
		case "function_call", "custom_tool_call":
			args := it.Arguments
			if it.Type == "custom_tool_call" {
				args = it.Input
			}
			c.Messages = append(c.Messages, Message{Role: "assistant", Calls: []Call{{ID: it.CallID, Name: it.Name, Args: json.RawMessage(args)}}})
		case "function_call_output", "custom_tool_call_output":
			c.Messages = append(c.Messages, Message{Role: "user", Results: []Result{{CallID: it.CallID, Text: openAIText(it.Output)}}})
		}
	}
	for _, t := range req.Tools {
		if t.Name != "" {
			c.Tools = append(c.Tools, Tool{Name: t.Name, Schema: t.Parameters})
		}
	}
	return c, nil
}

// openAIText reads content that is a string, a list of parts with text, or
// an object with text or content.
func openAIText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	var obj struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if obj.Text != "" {
			return obj.Text
		}
		if len(obj.Content) > 0 {
			return openAIText(obj.Content)
		}
	}
	return ""
}

func writeResponses(w *sseWriter, c *Conversation, r Reply) {
	step := len(c.Messages) // ids unique in a continued conversation too
	respID := fmt.Sprintf("resp_scripted_%d", step)
	var output []map[string]any
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		if w.stream {
			w.event(typ, fields)
		}
	}
	response := func(status string) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": 0, "model": c.Model, "status": status, "output": output}
		if output == nil {
			m["output"] = []any{}
		}
		return m
	}
	ev("response.created", map[string]any{"response": response("in_progress")})
	paused := !r.Pause
	hold := func() bool {
		if paused {
			return true
		}
		paused = true
		return !w.stream || w.pause()
	}
	idx := 0
	if len(r.Thinking) > 0 {
		id := fmt.Sprintf("rs_scripted_%d", step)
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
		for _, d := range r.Thinking {
			ev("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "delta": d})
			if !hold() {
				return
			}
		}
		item := map[string]any{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": strings.Join(r.Thinking, "")}}}
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	if len(r.Text) > 0 {
		id := fmt.Sprintf("msg_scripted_%d", step)
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
		ev("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, d := range r.Text {
			ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "delta": d})
			if !hold() {
				return
			}
		}
		full := strings.Join(r.Text, "")
		part := map[string]any{"type": "output_text", "text": full, "annotations": []any{}}
		ev("response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": full})
		ev("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part})
		item := map[string]any{"type": "message", "id": id, "status": "completed", "role": "assistant", "content": []any{part}}
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for i, call := range r.Calls {
		id := fmt.Sprintf("fc_scripted_%d_%d", step, i)
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"type": "function_call", "id": id, "call_id": call.ID, "name": call.Name, "arguments": "", "status": "in_progress"}})
		ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": idx, "delta": string(call.Args)})
		ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": string(call.Args)})
		item := map[string]any{"type": "function_call", "id": id, "call_id": call.ID, "name": call.Name, "arguments": string(call.Args), "status": "completed"}
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	final := response("completed")
	final["usage"] = map[string]any{"input_tokens": r.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": r.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": r.Input + r.Output}
	kind := "response.completed"
	if r.Stop == StopLength {
		kind = "response.incomplete"
		final["status"] = "incomplete"
		final["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	if !w.stream {
		w.whole(final)
		return
	}
	ev(kind, map[string]any{"response": final})
}
