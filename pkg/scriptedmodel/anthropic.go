package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// Anthropic Messages: POST /v1/messages (and count_tokens), as documented in
// Anthropic's API reference ("Messages", "Streaming Messages").
var anthropicAPI = dialect{
	api:   APIAnthropic,
	match: modelapi.Anthropic.Match,
	parse: parseAnthropic,
	write: writeAnthropic,
	fail:  failWith(modelapi.Anthropic),
	extra: func(w http.ResponseWriter, p string) bool {
		if !modelapi.Anthropic.Side(p) {
			return false
		}
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 100})
		return true
	},
}

type anthropicRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// anthropicBlock is one content block of a message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func parseAnthropic(_ string, body []byte) (*Conversation, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	c := &Conversation{Model: req.Model, Stream: req.Stream}
	sys, err := anthropicBlocks(req.System)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	for _, b := range sys {
		c.System += b.Text
	}
	for i, m := range req.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msg := Message{Role: m.Role}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				msg.Text += b.Text
			case "tool_use":
				msg.Calls = append(msg.Calls, Call{ID: b.ID, Name: b.Name, Args: b.Input})
			case "tool_result":
				inner, err := anthropicBlocks(b.Content)
				if err != nil {
					return nil, fmt.Errorf("messages[%d] tool_result: %w", i, err)
				}
				r := Result{CallID: b.ToolUseID, IsError: b.IsError}
				for _, ib := range inner {
					r.Text += ib.Text
				}
				msg.Results = append(msg.Results, r)
			}
		}
		c.Messages = append(c.Messages, msg)
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, Tool{Name: t.Name, Schema: t.InputSchema})
	}
	return c, nil
}

// anthropicBlocks reads content that is a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

func anthropicStop(s Stop) string {
	switch s {
	case StopTool:
		return "tool_use"
	case StopLength:
		return "max_tokens"
	}
	return "end_turn"
}

func writeAnthropic(w *sseWriter, c *Conversation, r Reply) {
	id := fmt.Sprintf("msg_scripted_%d", len(c.Messages))
	usage := map[string]any{"input_tokens": r.Input, "output_tokens": r.Output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !w.stream {
		var content []map[string]any
		if len(r.Thinking) > 0 {
			content = append(content, map[string]any{"type": "thinking", "thinking": strings.Join(r.Thinking, ""), "signature": "scripted"})
		}
		if len(r.Text) > 0 {
			content = append(content, map[string]any{"type": "text", "text": strings.Join(r.Text, "")})
		}
		for _, call := range r.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": call.Args})
		}
		w.whole(map[string]any{"id": id, "type": "message", "role": "assistant", "model": c.Model, "content": content,
			"stop_reason": anthropicStop(r.Stop), "stop_sequence": nil, "usage": usage})
		return
	}
	w.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": c.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.Input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	index := 0
	paused := !r.Pause
	block := func(start map[string]any, deltaType, key string, deltas []string) bool {
		w.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for _, d := range deltas {
			w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": deltaType, key: d}})
			if !paused {
				paused = true
				if !w.pause() {
					return false
				}
			}
		}
		if deltaType == "thinking_delta" {
			w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": "scripted"}})
		}
		w.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
		return true
	}
	if len(r.Thinking) > 0 && !block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", "thinking", r.Thinking) {
		return
	}
	if len(r.Text) > 0 && !block(map[string]any{"type": "text", "text": ""}, "text_delta", "text", r.Text) {
		return
	}
	for _, call := range r.Calls {
		if !block(map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": map[string]any{}}, "input_json_delta", "partial_json", []string{string(call.Args)}) {
			return
		}
	}
	w.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(r.Stop), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.Output}})
	w.event("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
