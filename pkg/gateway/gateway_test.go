package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// A request of each API at step 1 (one prompt, one earlier shell call and
// its answer, a shell tool), as the CLIs send them; %s is the stream flag
// (Gemini's is its path).
var requests = []struct {
	api, path, wholePath, body string
}{
	{modelapi.NameAnthropic, "/v1/messages", "/v1/messages", `{"model":"m","stream":%s,
		"messages":[{"role":"user","content":"do it"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ANSWER"}]}],
		"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`},
	{modelapi.NameResponses, "/v1/responses", "/v1/responses", `{"model":"m","stream":%s,
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},
		{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
		{"type":"function_call_output","call_id":"a","output":"ANSWER"}],
		"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`},
	{modelapi.NameChat, "/v1/chat/completions", "/v1/chat/completions", `{"model":"m","stream":%s,"messages":[
		{"role":"user","content":"do it"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
		{"role":"tool","tool_call_id":"a","content":"ANSWER"}],
		"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`},
	{modelapi.NameGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", "/v1beta/models/m:generateContent", `{"contents":[
		{"role":"user","parts":[{"text":"do it %.0s"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ANSWER"}}}]}],
		"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}}}}]}]}`},
}

// rig is a gateway in front of a scripted model (in process), its events
// and log.
type rig struct {
	gw     *Gateway
	model  *scriptedmodel.Server
	mu     sync.Mutex
	events []monitor.ModelEvent
	log    bytes.Buffer
}

// newRig makes a rig; wrap, when given, wraps the model (to watch what it
// gets).
func newRig(t *testing.T, scenario string, o Options, wrap ...func(http.Handler) http.Handler) *rig {
	t.Helper()
	sc, err := scriptedmodel.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{}
	r.model, err = scriptedmodel.New(scriptedmodel.Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	if o.Upstream == nil {
		o.Upstream, _ = url.Parse("http://model.invalid/base")
	}
	if o.Transport == nil {
		var h http.Handler = http.StripPrefix("/base", r.model)
		for _, w := range wrap {
			h = w(h)
		}
		o.Transport = InProcess(h)
	}
	o.Observe = func(e monitor.ModelEvent) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
	}
	o.Log = funcr.New(func(prefix, args string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		fmt.Fprintln(&r.log, prefix, args)
	}, funcr.Options{Verbosity: 9})
	r.gw, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// do sends one request through the gateway and returns the answer.
func (r *rig) do(t *testing.T, method, path, body string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, req)
	return w
}

// ends returns the message ends observed so far.
func (r *rig) ends() []monitor.ModelEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []monitor.ModelEvent
	for _, e := range r.events {
		if e.End {
			out = append(out, e)
		}
	}
	return out
}

// TestMetered checks each API's answers, streamed and whole, are metered
// as the scripted model served them: its usage (input 1000+100 per step
// unless the scenario says, output 50), the model, the stop.
func TestMetered(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		want     monitor.ModelEvent
	}{
		{"healthy", monitor.ModelEvent{Usage: monitor.Usage{Input: 1100, Output: 50}, Stop: monitor.StopEnd}},
		{"identicalLoop", monitor.ModelEvent{Usage: monitor.Usage{Input: 1100, Output: 50}, Stop: monitor.StopToolUse}},
		{"lengthStop", monitor.ModelEvent{Usage: monitor.Usage{Input: 1100, Output: 32000}, Stop: monitor.StopLength}},
		{"overspend", monitor.ModelEvent{Usage: monitor.Usage{Input: 150_000, Output: 50}, Stop: monitor.StopToolUse}},
		{"apiError", monitor.ModelEvent{Stop: monitor.StopError}},
	} {
		for _, req := range requests {
			for _, stream := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tc.scenario, req.api, stream), func(t *testing.T) {
					r := newRig(t, tc.scenario, Options{})
					path := req.path
					if !stream {
						path = req.wholePath
					}
					w := r.do(t, "POST", path, fmt.Sprintf(req.body, fmt.Sprint(stream)), nil)
					want := tc.want
					want.End, want.Model = true, "m"
					if tc.scenario == "apiError" && req.api != modelapi.NameGemini {
						want.Model = "" // the error names none; Gemini's path does
					}
					ends := r.ends()
					if len(ends) != 1 || fmt.Sprint(ends[0]) != fmt.Sprint(want) {
						t.Fatalf("observed %+v, want one %+v; answer %d:\n%s", ends, want, w.Code, w.Body)
					}
					if c := r.gw.Counts(); c.Forwarded != 1 || c.Unmetered != 0 || c.Refused != 0 {
						t.Errorf("counts %+v", c)
					}
				})
			}
		}
	}
}

// TestDeltas checks the deltas the model streamed reach Observe, the
// degeneration the CLI's stdout hides (codex, opencode).
func TestDeltas(t *testing.T) {
	for _, req := range requests {
		t.Run(req.api, func(t *testing.T) {
			r := newRig(t, "repetition", Options{Deltas: true})
			w := r.do(t, "POST", req.path, fmt.Sprintf(req.body, "true"), nil)
			var text strings.Builder
			n := 0
			for _, e := range r.events {
				if e.Delta != nil {
					n++
					text.Write(e.Delta)
				}
			}
			// The answer as the client read it holds every delta.
			if n < 10 || text.Len() < 4096 || !strings.Contains(w.Body.String(), strings.Fields(text.String())[0]) {
				t.Errorf("%d deltas, %d bytes", n, text.Len())
			}
			if ends := r.ends(); len(ends) != 1 || ends[0].Usage.Output != 2000 {
				t.Errorf("ends %+v", ends)
			}
		})
	}
}

// TestRefused checks a refused model request is answered in the API's
// shape with the refusal's status, names turnwatch, the reason and kubectl,
// and never reaches the model; side endpoints pass.
func TestRefused(t *testing.T) {
	for _, req := range requests {
		t.Run(req.api, func(t *testing.T) {
			r := newRig(t, "healthy", Options{Refusal: 403, Gate: func() *Refusal {
				return &Refusal{Reason: "identicalCalls", Message: "the same call 8 times"}
			}})
			w := r.do(t, "POST", req.path, fmt.Sprintf(req.body, "true"), nil)
			api, _ := modelapi.Of(strings.Split(req.path, "?")[0])
			want := string(api.Error(403, "turnwatch refused this model request (identicalCalls): the same call 8 times. The turn is over; see kubectl describe agentturn for why."))
			if w.Code != 403 || w.Body.String() != want || w.Header().Get("X-Turnwatch-Refused") != "identicalCalls" {
				t.Errorf("answered %d %s, want 403 %s", w.Code, w.Body, want)
			}
			if n := len(r.model.Requests()); n != 0 {
				t.Errorf("the model saw %d requests", n)
			}
			if c := r.gw.Counts(); c.Refused != 1 || c.Forwarded != 0 {
				t.Errorf("counts %+v", c)
			}
			if !strings.Contains(r.log.String(), "identicalCalls") {
				t.Errorf("the refusal is not logged: %s", r.log.String())
			}
		})
	}
	r := newRig(t, "healthy", Options{Gate: func() *Refusal { return &Refusal{Reason: "budget"} }})
	if w := r.do(t, "POST", "/v1/messages/count_tokens", `{"model":"m","messages":[]}`, nil); w.Code != 200 {
		t.Errorf("a side request was refused: %d %s", w.Code, w.Body)
	}
}

// TestRefusalHeld checks a refusal that holds keeps the request open,
// unanswered, until its client goes, and never reaches the model.
func TestRefusalHeld(t *testing.T) {
	r := newRig(t, "healthy", Options{Gate: func() *Refusal { return &Refusal{Reason: "budget", Hold: true} }})
	ctx, gone := context.WithCancel(context.Background())
	req := httptest.NewRequest("POST", requests[0].path, strings.NewReader(fmt.Sprintf(requests[0].body, "true"))).WithContext(ctx)
	w := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		r.gw.ServeHTTP(w, req)
	}()
	for r.gw.Counts().Refused == 0 {
		select {
		case <-served:
			t.Fatalf("answered %d %s: want the request held", w.Code, w.Body)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case <-served:
		t.Fatalf("answered %d %s: want the request held", w.Code, w.Body)
	case <-time.After(50 * time.Millisecond):
	}
	gone()
	<-served
	if w.Body.Len() != 0 || w.Header().Get("X-Turnwatch-Refused") != "" {
		t.Errorf("a held request was answered: %d %s", w.Code, w.Body)
	}
	if n := len(r.model.Requests()); n != 0 || r.gw.Counts().Forwarded != 0 {
		t.Errorf("the model saw %d requests", n)
	}
}

// TestNoOpenProxy checks the gateway dials only its upstream: CONNECT and
// absolute URIs are refused before anything is sent.
func TestNoOpenProxy(t *testing.T) {
	dialled := 0
	o := Options{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		dialled++
		return nil, io.EOF
	})}
	r := newRig(t, "healthy", o)
	for _, req := range []*http.Request{
		{Method: "CONNECT", URL: &url.URL{Host: "evil.example:443"}, Host: "evil.example:443", RequestURI: "evil.example:443", Header: http.Header{}},
		httptest.NewRequest("POST", "http://evil.example/v1/messages", strings.NewReader("{}")),
		httptest.NewRequest("GET", "http://169.254.169.254/latest/meta-data/", nil),
	} {
		w := httptest.NewRecorder()
		r.gw.ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d", req.Method, req.RequestURI, w.Code)
		}
	}
	if dialled != 0 || r.gw.Counts().Forwarded != 0 {
		t.Errorf("dialled %d times", dialled)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUpgradeRefused checks a model request on an upgraded connection (a
// websocket: ungated, unmetered) is refused, nothing sent upstream.
func TestUpgradeRefused(t *testing.T) {
	r := newRig(t, "healthy", Options{})
	w := r.do(t, "GET", "/v1/responses", "", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}})
	if w.Code != http.StatusNotImplemented || !strings.Contains(w.Body.String(), `"error"`) {
		t.Errorf("answered %d %s", w.Code, w.Body)
	}
	if len(r.model.Requests()) != 0 || r.gw.Counts().Forwarded != 0 {
		t.Errorf("forwarded")
	}
}
