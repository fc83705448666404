package gateway

import (
	"bytes"
	"encoding/json"
	"errors"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Each API's reader: the fields of its answers (streamed events and whole
// answers) that carry the model, the usage, the stop reason and the
// deltas, as the providers document them and the scripted model writes
// them (pkg/scriptedmodel).

// errNoObject is an event of none of the API's shapes.
var errNoObject = errors.New("not an event of this API")

// anthropicUsage is the Messages API's usage; message_delta's is
// cumulative, each field present only when it changed.
type anthropicUsage struct {
	Input      *int64 `json:"input_tokens"`
	Output     *int64 `json:"output_tokens"`
	CacheWrite *int64 `json:"cache_creation_input_tokens"`
	CacheRead  *int64 `json:"cache_read_input_tokens"`
}

func (u *anthropicUsage) into(dst *monitor.Usage) {
	if u == nil {
		return
	}
	set(&dst.Input, u.Input)
	set(&dst.Output, u.Output)
	set(&dst.CacheWrite, u.CacheWrite)
	set(&dst.CacheRead, u.CacheRead)
}

type anthropicMessage struct {
	Type       string          `json:"type"`
	Model      string          `json:"model"`
	StopReason string          `json:"stop_reason"`
	Usage      *anthropicUsage `json:"usage"`
}

type anthropicEvent struct {
	anthropicMessage
	Message *anthropicMessage `json:"message"`
	Delta   struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		Thinking   string `json:"thinking"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
}

// readAnthropic reads a Messages stream's event or a whole message.
func readAnthropic(a *answer, data []byte) error {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return err
	}
	switch ev.Type {
	case "message": // a whole answer
		a.model, a.stop, a.final = ev.Model, anthropicStop(ev.StopReason), ev.Usage != nil
		ev.Usage.into(&a.usage)
	case "message_start":
		if ev.Message != nil {
			a.model = ev.Message.Model
			ev.Message.Usage.into(&a.usage)
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			a.delta(ev.Delta.Text, false)
		case "thinking_delta":
			a.delta(ev.Delta.Thinking, true)
		}
	case "message_delta":
		a.stop = anthropicStop(ev.Delta.StopReason)
		ev.Usage.into(&a.usage)
		a.final = ev.Usage != nil
	case "error":
		a.stop = monitor.StopError
	case "":
		return errNoObject
	}
	return nil
}

// anthropicStop normalizes a stop_reason as the engine does for claude's
// stream (monitor's claudeStop).
func anthropicStop(s string) string {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return monitor.StopEnd
	case "tool_use":
		return monitor.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return monitor.StopLength
	case "refusal":
		return monitor.StopError
	}
	return ""
}

type responsesObject struct {
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type string `json:"type"`
	} `json:"output"`
	Usage *struct {
		Input        int64 `json:"input_tokens"`
		Output       int64 `json:"output_tokens"`
		InputDetails struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

type responsesEvent struct {
	Type     string           `json:"type"`
	Object   string           `json:"object"` // "response" for a whole answer
	Delta    string           `json:"delta"`
	Response *responsesObject `json:"response"`
	Item     struct {
		Type string `json:"type"`
	} `json:"item"`
}

// readResponses reads a Responses stream's event or a whole response.
func readResponses(a *answer, data []byte) error {
	var ev responsesEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return err
	}
	if ev.Object == "response" { // a whole answer: the event is the response
		var r responsesObject
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		a.response(&r)
		return nil
	}
	switch ev.Type {
	case "response.created", "response.in_progress":
		if ev.Response != nil {
			a.model = ev.Response.Model
		}
	case "response.output_item.added":
		a.calls = a.calls || toolCall(ev.Item.Type)
	case "response.output_text.delta":
		a.delta(ev.Delta, false)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		a.delta(ev.Delta, true)
	case "response.completed", "response.incomplete", "response.failed":
		if ev.Response != nil {
			a.response(ev.Response)
		}
	case "error":
		a.stop = monitor.StopError
	case "":
		return errNoObject
	}
	return nil
}

// response reads a response's end: its usage, status and output.
func (a *answer) response(r *responsesObject) {
	if r.Model != "" {
		a.model = r.Model
	}
	for _, o := range r.Output {
		a.calls = a.calls || toolCall(o.Type)
	}
	a.stop = monitor.StopEnd
	if a.calls {
		a.stop = monitor.StopToolUse
	}
	switch {
	case r.Status == "failed":
		a.stop = monitor.StopError
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		a.stop = monitor.StopLength
	case r.Status == "incomplete":
		a.stop = monitor.StopError
	}
	if u := r.Usage; u != nil {
		cached := min(max(u.InputDetails.Cached, 0), u.Input)
		a.usage = monitor.Usage{Input: u.Input - cached, Output: u.Output, CacheRead: cached}
		a.final = true
	}
}

// toolCall says whether a Responses output item is a tool call.
func toolCall(itemType string) bool {
	return itemType == "function_call" || itemType == "custom_tool_call"
}

type chatChunk struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt        int64 `json:"prompt_tokens"`
		Completion    int64 `json:"completion_tokens"`
		PromptDetails struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// readChat reads a Chat Completions chunk or a whole completion.
func readChat(a *answer, data []byte) error {
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	if c.Object == "" && c.Model == "" && c.Choices == nil && c.Usage == nil {
		return errNoObject
	}
	if c.Model != "" {
		a.model = c.Model
	}
	for _, ch := range c.Choices {
		a.delta(ch.Delta.ReasoningContent+ch.Delta.Reasoning, true)
		a.delta(ch.Delta.Content, false)
		if ch.FinishReason != "" {
			a.stop = chatStop(ch.FinishReason)
		}
	}
	if u := c.Usage; u != nil {
		cached := min(max(u.PromptDetails.Cached, 0), u.Prompt)
		a.usage = monitor.Usage{Input: u.Prompt - cached, Output: u.Completion, CacheRead: cached}
		a.final = true
	}
	return nil
}

func chatStop(s string) string {
	switch s {
	case "stop":
		return monitor.StopEnd
	case "tool_calls", "function_call":
		return monitor.StopToolUse
	case "length":
		return monitor.StopLength
	}
	return monitor.StopError // content_filter and what a provider adds
}

type geminiChunk struct {
	ModelVersion string `json:"modelVersion"`
	Candidates   []struct {
		Content struct {
			Parts []struct {
				Text         string          `json:"text"`
				Thought      bool            `json:"thought"`
				FunctionCall json.RawMessage `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	Usage *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
}

// readGemini reads a Gemini chunk, or a whole answer: one response, or the
// array streamGenerateContent sends without alt=sse.
func readGemini(a *answer, data []byte) error {
	if d := bytes.TrimSpace(data); len(d) > 0 && d[0] == '[' {
		var chunks []json.RawMessage
		if err := json.Unmarshal(d, &chunks); err != nil {
			return err
		}
		for _, c := range chunks {
			if err := readGemini(a, c); err != nil {
				return err
			}
		}
		return nil
	}
	var c geminiChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	if c.ModelVersion != "" {
		a.model = c.ModelVersion
	}
	for _, cand := range c.Candidates {
		a.geminiCandidate(cand.Content.Parts, cand.FinishReason)
	}
	if u := c.Usage; u != nil {
		cached := min(max(u.Cached, 0), u.Prompt)
		a.usage = monitor.Usage{Input: u.Prompt - cached, Output: u.Candidates + u.Thoughts, CacheRead: cached}
		a.final = a.final || a.stop != "" // usage comes with every chunk; the last one's, with the finish, is whole
	}
	return nil
}

func (a *answer) geminiCandidate(parts []struct {
	Text         string          `json:"text"`
	Thought      bool            `json:"thought"`
	FunctionCall json.RawMessage `json:"functionCall"`
}, finish string) {
	for _, p := range parts {
		a.delta(p.Text, p.Thought)
		a.calls = a.calls || len(p.FunctionCall) > 0
	}
	switch finish {
	case "":
	case "STOP":
		a.stop = monitor.StopEnd
		if a.calls {
			a.stop = monitor.StopToolUse
		}
	case "MAX_TOKENS":
		a.stop = monitor.StopLength
	default:
		a.stop = monitor.StopError // SAFETY, RECITATION, MALFORMED_FUNCTION_CALL...
	}
}

// set copies a present count.
func set(dst *int64, v *int64) {
	if v != nil {
		*dst = *v
	}
}
