package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// Gemini API: POST /v1beta/models/MODEL:streamGenerateContent?alt=sse (and
// :generateContent, :countTokens), as in Google's Gemini API reference.
var geminiAPI = dialect{
	api:   APIGemini,
	match: modelapi.Gemini.Match,
	parse: parseGemini,
	write: writeGemini,
	fail:  failWith(modelapi.Gemini),
	extra: func(w http.ResponseWriter, p string) bool {
		if !modelapi.Gemini.Side(p) {
			return false
		}
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 100})
		return true
	},
}

type geminiPart struct {
	Text         string `json:"text,omitempty"`
	Thought      bool   `json:"thought,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func parseGemini(path string, body []byte) (*Conversation, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	c := &Conversation{Stream: strings.HasSuffix(path, ":streamGenerateContent")}
	c.Model = modelapi.GeminiModel(path)
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			c.System += p.Text
		}
	}
	for _, ct := range req.Contents {
		msg := Message{Role: "user"}
		if ct.Role == "model" {
			msg.Role = "assistant"
		}
		for _, p := range ct.Parts {
			switch {
			case p.FunctionCall != nil:
				msg.Calls = append(msg.Calls, Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
			case p.FunctionResponse != nil:
				msg.Results = append(msg.Results, geminiResult(p.FunctionResponse.ID, p.FunctionResponse.Response))
			case !p.Thought:
				msg.Text += p.Text
			}
		}
		c.Messages = append(c.Messages, msg)
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			s := f.ParametersJSONSchema
			if len(s) == 0 {
				s = f.Parameters
			}
			c.Tools = append(c.Tools, Tool{Name: f.Name, Schema: s})
		}
	}
	c.Schema = req.GenerationConfig.ResponseJSONSchema
	if len(c.Schema) == 0 {
		c.Schema = req.GenerationConfig.ResponseSchema
	}
	return c, nil
}

// geminiResult reads a functionResponse's response: {"output": ...} or
// {"error": ...} by Gemini CLI's convention, else the whole object.
func geminiResult(id string, raw json.RawMessage) Result {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(raw, &r)
	switch {
	case len(r.Error) > 0:
		return Result{CallID: id, Text: openAIText(r.Error) + string(raw), IsError: true}
	case len(r.Output) > 0:
		return Result{CallID: id, Text: openAIText(r.Output)}
	}
	return Result{CallID: id, Text: string(raw)}
}

func geminiFinish(s Stop) string {
	if s == StopLength {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func writeGemini(w *sseWriter, c *Conversation, r Reply) {
	id := fmt.Sprintf("scripted-%d", len(c.Messages))
	usage := map[string]any{"promptTokenCount": r.Input, "candidatesTokenCount": r.Output, "totalTokenCount": r.Input + r.Output}
	chunk := func(parts []map[string]any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		m := map[string]any{"candidates": []any{cand}, "modelVersion": c.Model, "responseId": id}
		if finish != "" {
			m["usageMetadata"] = usage
		}
		return m
	}
	var calls []map[string]any
	for _, call := range r.Calls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": call.Name, "args": call.Args}})
	}
	if !w.stream {
		var parts []map[string]any
		if len(r.Thinking) > 0 {
			parts = append(parts, map[string]any{"text": strings.Join(r.Thinking, ""), "thought": true})
		}
		if len(r.Text) > 0 {
			parts = append(parts, map[string]any{"text": strings.Join(r.Text, "")})
		}
		w.whole(chunk(append(parts, calls...), geminiFinish(r.Stop)))
		return
	}
	paused := !r.Pause
	for _, part := range []struct {
		thought bool
		deltas  []string
	}{{true, r.Thinking}, {false, r.Text}} {
		for _, d := range part.deltas {
			p := map[string]any{"text": d}
			if part.thought {
				p["thought"] = true
			}
			w.event("", chunk([]map[string]any{p}, ""))
			if !paused {
				paused = true
				if !w.pause() {
					return
				}
			}
		}
	}
	last := calls
	if len(last) == 0 {
		last = []map[string]any{{"text": ""}}
	}
	w.event("", chunk(last, geminiFinish(r.Stop)))
}
