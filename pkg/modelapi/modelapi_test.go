package modelapi

import (
	"encoding/json"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		path        string
		api         string
		model, side bool
	}{
		{"/v1/messages", NameAnthropic, true, false},
		{"/anthropic/v1/messages/count_tokens", NameAnthropic, false, true},
		{"/v1/responses", NameResponses, true, false},
		{"/v1/chat/completions", NameChat, true, false},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", NameGemini, true, false},
		{"/v1beta/models/gemini-2.5-pro:generateContent", NameGemini, true, false},
		{"/v1beta/models/gemini-2.5-pro:countTokens", NameGemini, false, true},
		{"/v1/models", "", false, false},
		{"/v1/messages/batches", "", false, false},
	} {
		a, ok := Of(tc.path)
		if a.Name != tc.api || ok != (tc.api != "") {
			t.Errorf("Of(%q) = %q, %v; want %q", tc.path, a.Name, ok, tc.api)
			continue
		}
		if ok && (a.Model(tc.path) != tc.model || a.Side(tc.path) != tc.side) {
			t.Errorf("%q: model %v side %v; want %v %v", tc.path, a.Model(tc.path), a.Side(tc.path), tc.model, tc.side)
		}
	}
}

func TestGeminiModel(t *testing.T) {
	if m := GeminiModel("/v1beta/models/gemini-2.5-flash:streamGenerateContent"); m != "gemini-2.5-flash" {
		t.Errorf("GeminiModel = %q", m)
	}
	if m := GeminiModel("/v1/messages"); m != "" {
		t.Errorf("GeminiModel = %q, want none", m)
	}
}

// TestError checks each API's error body carries the message where its
// clients read it (the SDKs' error.message).
func TestError(t *testing.T) {
	for _, a := range APIs {
		for _, status := range []int{400, 401, 403, 429, 500} {
			var b struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(a.Error(status, "refused here"), &b); err != nil || b.Error.Message != "refused here" {
				t.Errorf("%s %d: %s (%v)", a.Name, status, a.Error(status, "refused here"), err)
			}
		}
	}
	if a := string(Anthropic.Error(400, "m")); a != `{"error":{"message":"m","type":"invalid_request_error"},"type":"error"}`+"\n" {
		t.Errorf("anthropic error: %s", a)
	}
	if g := string(Gemini.Error(429, "m")); g != `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`+"\n" {
		t.Errorf("gemini error: %s", g)
	}
}
