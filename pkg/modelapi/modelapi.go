// Package modelapi is the table of the model APIs the agent CLIs speak:
// which paths are an API's model requests and side endpoints, the header its
// key goes in, and the shape of its errors. The scripted model
// (pkg/scriptedmodel) matches and fails by it; the model gateway
// (pkg/gateway) sets keys, refuses and meters by it. One fact in one place:
// a fifth API is one more row here.
package modelapi

import (
	"encoding/json"
	"strings"
)

// The APIs' names, as the scripted model's request log and the gateway's
// logs name them.
const (
	NameAnthropic = "anthropic-messages"
	NameResponses = "openai-responses"
	NameChat      = "openai-chat"
	NameGemini    = "gemini"
)

// API is one model API.
type API struct {
	// Name is the API's name (Name* constants).
	Name string
	// Model says whether a path is one of the API's model requests: a
	// request the model answers with a message, the one that costs.
	Model func(path string) bool
	// Side says whether a path is one of the API's side endpoints (token
	// counts): served like a model request, but answered with no message.
	Side func(path string) bool
	// KeyHeader is the request header the API reads its key from, and
	// KeyPrefix what precedes the key in it ("Bearer ").
	KeyHeader string
	KeyPrefix string
	// Error is the body of an error answer in the API's own shape, for an
	// HTTP status and a message (JSON).
	Error func(status int, msg string) []byte
}

// Match says whether a path is the API's, a model request or a side one.
func (a API) Match(path string) bool { return a.Model(path) || a.Side(path) }

// Anthropic Messages: POST /v1/messages and /v1/messages/count_tokens
// (Anthropic's API reference, "Messages", "Errors").
var Anthropic = API{
	Name:      NameAnthropic,
	Model:     func(p string) bool { return strings.HasSuffix(p, "/v1/messages") },
	Side:      func(p string) bool { return strings.HasSuffix(p, "/v1/messages/count_tokens") },
	KeyHeader: "x-api-key",
	Error:     anthropicError,
}

// Responses is OpenAI's Responses API: POST /responses (the base URL's
// /v1 included by the client).
var Responses = API{
	Name:      NameResponses,
	Model:     func(p string) bool { return strings.HasSuffix(p, "/responses") },
	Side:      none,
	KeyHeader: "Authorization",
	KeyPrefix: "Bearer ",
	Error:     openAIError,
}

// Chat is OpenAI's Chat Completions API: POST /chat/completions.
var Chat = API{
	Name:      NameChat,
	Model:     func(p string) bool { return strings.HasSuffix(p, "/chat/completions") },
	Side:      none,
	KeyHeader: "Authorization",
	KeyPrefix: "Bearer ",
	Error:     openAIError,
}

// Gemini is the Gemini API: POST .../models/MODEL:generateContent,
// :streamGenerateContent and the side :countTokens.
var Gemini = API{
	Name: NameGemini,
	Model: func(p string) bool {
		return strings.Contains(p, "/models/") &&
			(strings.HasSuffix(p, ":streamGenerateContent") || strings.HasSuffix(p, ":generateContent"))
	},
	Side:      func(p string) bool { return strings.Contains(p, "/models/") && strings.HasSuffix(p, ":countTokens") },
	KeyHeader: "x-goog-api-key",
	Error:     geminiError,
}

// APIs is the table, in the order a path is matched.
var APIs = []API{Anthropic, Responses, Chat, Gemini}

// Of returns the API whose model request or side endpoint path is.
func Of(path string) (API, bool) {
	for _, a := range APIs {
		if a.Match(path) {
			return a, true
		}
	}
	return API{}, false
}

// GeminiModel is the model a Gemini request's path names
// (".../models/gemini-2.5-pro:generateContent"), "" when it names none.
func GeminiModel(path string) string {
	i := strings.Index(path, "/models/")
	if i < 0 {
		return ""
	}
	m, _, _ := strings.Cut(path[i+len("/models/"):], ":")
	return m
}

func none(string) bool { return false }

func anthropicError(status int, msg string) []byte {
	kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if kind == "" {
		kind = "api_error"
	}
	return body(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func openAIError(status int, msg string) []byte {
	kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_exceeded"}[status]
	if kind == "" {
		kind = "server_error"
	}
	return body(map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": kind}})
}

func geminiError(status int, msg string) []byte {
	code := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
	if code == "" {
		code = "INTERNAL"
	}
	return body(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
}

// body is v as JSON with a newline, as json.Encoder writes it.
func body(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and ints always marshal
	}
	return append(b, '\n')
}
