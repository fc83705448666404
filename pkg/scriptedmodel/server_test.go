package scriptedmodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Requests of each API with one prompt, one earlier call and its answer,
// and a shell tool: the model must read them alike.
var apiRequests = []struct {
	api, path, body string
}{
	{APIAnthropic, "/v1/messages", `{"model":"m","stream":true,"system":[{"type":"text","text":"sys"}],
		"messages":[{"role":"user","content":"do it"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ANSWER"}],"is_error":true}]}],
		"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]}`},
	{APIResponses, "/v1/responses", `{"model":"m","stream":true,"instructions":"sys",
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},
		{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
		{"type":"function_call_output","call_id":"a","output":"ANSWER"}],
		"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`},
	{APIChat, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"system","content":"sys"},
		{"role":"user","content":"do it"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
		{"role":"tool","tool_call_id":"a","content":"ANSWER"}],
		"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`},
	{APIGemini, "/v1beta/models/m:streamGenerateContent", `{"systemInstruction":{"parts":[{"text":"sys"}]},
		"contents":[{"role":"user","parts":[{"text":"do it"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ANSWER"}}}]}],
		"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}}}}]}]}`},
}

func TestAPIsReadAlike(t *testing.T) {
	for _, tc := range apiRequests {
		t.Run(tc.api, func(t *testing.T) {
			srv, events := serve(t, "identicalLoop", tc.path, tc.body)
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("logged %d requests", len(reqs))
			}
			r := reqs[0]
			c := r.Conversation
			if r.API != tc.api || r.Side || r.Status != 200 || c == nil {
				t.Fatalf("logged %+v", r)
			}
			if c.Step() != 1 || c.Prompts() != 1 || c.Fresh() || !c.Contains("ANSWER") || c.System != "sys" || c.Model != "m" {
				t.Errorf("read step %d, prompts %d, fresh %v, system %q, model %q", c.Step(), c.Prompts(), c.Fresh(), c.System, c.Model)
			}
			if !strings.Contains(events, `cat /etc/os-release`) {
				t.Errorf("the answer does not call the shell with the loop's command:\n%s", events)
			}
		})
	}
}

// serve posts one request to a server playing scenario and returns the
// server and the answer's data lines.
func serve(t *testing.T, scenario, path, body string) (*Server, string) {
	t.Helper()
	sc, err := Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	resp, err := http.Post(hs.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc2 := bufio.NewScanner(resp.Body)
	for sc2.Scan() {
		line, ok := strings.CutPrefix(sc2.Text(), "data: ")
		if !ok {
			continue
		}
		if line != "[DONE]" && !json.Valid([]byte(line)) {
			t.Errorf("data line is not JSON: %s", line)
		}
		b.WriteString(line + "\n")
	}
	return srv, b.String()
}

func TestErrorsInTheAPIsShape(t *testing.T) {
	for _, tc := range apiRequests {
		t.Run(tc.api, func(t *testing.T) {
			sc, _ := Lookup("apiError")
			srv, _ := New(Options{Scenario: sc, ErrorStatus: 529})
			hs := httptest.NewServer(srv)
			defer hs.Close()
			resp, err := http.Post(hs.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error map[string]any `json:"error"`
			}
			if resp.StatusCode != 529 || json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error["message"] == nil {
				t.Errorf("status %d, body %+v", resp.StatusCode, e)
			}
		})
	}
}

func TestSideRequests(t *testing.T) {
	srv, events := serve(t, "identicalLoop", "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"a title please"}]}`)
	if r := srv.Requests()[0]; !r.Side || strings.Contains(events, "tool_use") {
		t.Errorf("a request without tools got the scenario: %+v\n%s", r, events)
	}
	// The log says what the answer reported as used.
	if r := srv.Requests()[0]; r.Input != 10 || r.Output != 3 || !strings.Contains(events, `"input_tokens":10`) {
		t.Errorf("logged usage %d/%d, answered:\n%s", r.Input, r.Output, events)
	}
	// Gemini CLI's own checks ask for structured output, not streamed.
	srv, events = serve(t, "healthy", "/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"who speaks next"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"next_speaker":{"type":"string","enum":["user","model"]}}}}}`)
	if r := srv.Requests()[0]; !r.Side || events != "" {
		t.Errorf("structured request: %+v, events %q", r, events)
	}
}

func TestEveryScenarioHasAVerdict(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios {
		if seen[s.Name] || s.reply == nil || s.Plays == "" {
			t.Errorf("scenario %+v: duplicate, or without a reply or a description", s)
		}
		seen[s.Name] = true
		if s.Name != "healthy" && s.Class == "" && s.Detector != "silentRun" {
			t.Errorf("%s names no verdict", s.Name)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("an unknown scenario was found")
	}
}

func TestShellArgs(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"properties":{"command":{"type":"string"}}}`, `{"command":"ls"}`},
		{`{"properties":{"cmd":{"type":"string"}}}`, `{"cmd":"ls"}`},
		{`{"properties":{"command":{"type":"array"}}}`, `{"command":["bash","-lc","ls"]}`},
		{`{"properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command","description"]}`, `{"command":"ls","description":"scripted step"}`},
		{`not json`, `{"command":"ls"}`},
	}
	for _, tt := range tests {
		b, _ := json.Marshal(shellArgs(json.RawMessage(tt.schema), "ls"))
		if string(b) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.schema, b, tt.want)
		}
	}
}

// A model that wants a key answers a request without it, or with another,
// 401 in the API's shape, and serves one that carries it.
func TestServerWantsItsKey(t *testing.T) {
	sc, _ := Lookup("healthy")
	s, err := New(Options{Scenario: sc, Key: "sk-upstream"})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range []struct {
		key  string
		want int
	}{{"", 401}, {"sk-other", 401}, {"sk-upstream", 200}} {
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		if tt.key != "" {
			req.Header.Set("x-api-key", tt.key)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != tt.want || (tt.want == 401 && !strings.Contains(w.Body.String(), `"authentication_error"`)) {
			t.Errorf("key %q: HTTP %d %s, want %d", tt.key, w.Code, w.Body, tt.want)
		}
	}
}
