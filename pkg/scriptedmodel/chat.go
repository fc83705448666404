package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// OpenAI Chat Completions: POST /v1/chat/completions, as in OpenAI's API
// reference ("Chat", "The chat completion chunk object").
var chatAPI = dialect{
	api:   APIChat,
	match: modelapi.Chat.Match,
	parse: parseChat,
	write: writeChat,
	fail:  failWith(modelapi.Chat),
	extra: func(http.ResponseWriter, string) bool { return false },
}

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func parseChat(_ string, body []byte) (*Conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	c := &Conversation{Model: req.Model, Stream: req.Stream}
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			c.System += openAIText(m.Content)
		case "tool":
			c.Messages = append(c.Messages, Message{Role: "user", Results: []Result{{CallID: m.ToolCallID, Text: openAIText(m.Content)}}})
		default:
			msg := Message{Role: m.Role, Text: openAIText(m.Content)}
			for _, tc := range m.ToolCalls {
				msg.Calls = append(msg.Calls, Call{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			}
			c.Messages = append(c.Messages, msg)
		}
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, Tool{Name: t.Function.Name, Schema: t.Function.Parameters})
	}
	return c, nil
}

func chatFinish(s Stop) string {
	switch s {
	case StopTool:
		return "tool_calls"
	case StopLength:
		return "length"
	}
	return "stop"
}

func writeChat(w *sseWriter, c *Conversation, r Reply) {
	id := fmt.Sprintf("chatcmpl-scripted-%d", len(c.Messages))
	usage := map[string]any{"prompt_tokens": r.Input, "completion_tokens": r.Output, "total_tokens": r.Input + r.Output}
	if !w.stream {
		msg := map[string]any{"role": "assistant", "content": strings.Join(r.Text, "")}
		if len(r.Calls) > 0 {
			msg["tool_calls"] = chatCalls(r.Calls, true)
		}
		w.whole(map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatFinish(r.Stop)}}, "usage": usage})
		return
	}
	chunk := func(delta map[string]any, finish any) {
		w.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	paused := !r.Pause
	for _, part := range []struct {
		key    string
		deltas []string
	}{{"reasoning_content", r.Thinking}, {"content", r.Text}} {
		for _, d := range part.deltas {
			chunk(map[string]any{part.key: d}, nil)
			if !paused {
				paused = true
				if !w.pause() {
					return
				}
			}
		}
	}
	if len(r.Calls) > 0 {
		chunk(map[string]any{"tool_calls": chatCalls(r.Calls, false)}, nil)
	}
	chunk(map[string]any{}, chatFinish(r.Stop))
	w.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": c.Model, "choices": []any{}, "usage": usage})
	w.raw("[DONE]")
}

func chatCalls(calls []Call, whole bool) []any {
	out := make([]any, len(calls))
	for i, call := range calls {
		tc := map[string]any{"id": call.ID, "type": "function", "function": map[string]any{"name": call.Name, "arguments": string(call.Args)}}
		if !whole {
			tc["index"] = i
		}
		out[i] = tc
	}
	return out
}
