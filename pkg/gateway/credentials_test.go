package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

const (
	realKey     = "sk-real-7f3a9c0e41d2"
	placeholder = "turnwatch-placeholder"
)

// upstreamSeen records what the upstream received.
type upstreamSeen struct {
	mu       sync.Mutex
	requests []*http.Request
}

func (u *upstreamSeen) handler(answer http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r)
		u.mu.Unlock()
		answer.ServeHTTP(w, r)
	})
}

// TestKey checks every credential the agent sends is stripped, the real key
// goes in the API's own header only, and a request with another key is
// refused before the upstream sees it.
func TestKey(t *testing.T) {
	withPlaceholder := http.Header{
		"Authorization":  {"Bearer " + placeholder},
		"X-Api-Key":      {placeholder},
		"X-Goog-Api-Key": {placeholder},
		"Api-Key":        {placeholder},
	}
	for _, tc := range []struct {
		name, path string
		header     http.Header
		want       http.Header // the credential headers the upstream got
		status     int
	}{
		{"anthropic", "/v1/messages", withPlaceholder, http.Header{"X-Api-Key": {realKey}}, 200},
		{"responses", "/v1/responses", withPlaceholder, http.Header{"Authorization": {"Bearer " + realKey}}, 200},
		{"chat", "/v1/chat/completions?key=" + placeholder, nil, http.Header{"Authorization": {"Bearer " + realKey}}, 200},
		{"gemini in the query", "/v1beta/models/m:generateContent?key=" + placeholder + "&alt=sse", nil, http.Header{"X-Goog-Api-Key": {realKey}}, 200},
		{"no API's path: the header it came in", "/v1/models", http.Header{"Authorization": {"Bearer " + placeholder}}, http.Header{"Authorization": {"Bearer " + realKey}}, 200},
		{"no key", "/v1/messages", nil, http.Header{"X-Api-Key": {realKey}}, 200},
		{"another key", "/v1/messages", http.Header{"X-Api-Key": {"sk-the-agents-own"}}, nil, 401},
		{"another key beside the placeholder", "/v1/responses", http.Header{"Authorization": {"Bearer " + placeholder}, "Api-Key": {"x"}}, nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen upstreamSeen
			r := newRig(t, "healthy", Options{Key: realKey, Token: placeholder}, seen.handler)
			w := r.do(t, "POST", tc.path, fmt.Sprintf(requests[0].body, "false"), tc.header.Clone())
			if w.Code != tc.status && !(tc.status == 200 && w.Code == 404) {
				t.Fatalf("answered %d %s", w.Code, w.Body)
			}
			if tc.status != 200 {
				if len(seen.requests) != 0 {
					t.Errorf("the upstream saw a refused request")
				}
				if api, ok := modelapi.Of(tc.path); ok && w.Body.String() != string(api.Error(401, "the turnwatch model gateway refused this request: its key is not the one the agent was given")) {
					t.Errorf("not in the API's shape: %s", w.Body)
				}
				noKey(t, "the answer", w.Body.String())
				return
			}
			if len(seen.requests) != 1 {
				t.Fatalf("the upstream saw %d requests", len(seen.requests))
			}
			got := seen.requests[0]
			for _, c := range credentials {
				if fmt.Sprint(got.Header.Values(c.name)) != fmt.Sprint(tc.want.Values(c.name)) {
					t.Errorf("upstream %s: %q, want %q", c.name, got.Header.Values(c.name), tc.want.Values(c.name))
				}
			}
			if got.URL.Query().Has("key") || strings.Contains(got.URL.RawQuery, placeholder) {
				t.Errorf("upstream query %q", got.URL.RawQuery)
			}
			if strings.Contains(tc.path, "alt=sse") && got.URL.Query().Get("alt") != "sse" {
				t.Errorf("the query lost alt: %q", got.URL.RawQuery)
			}
			noKey(t, "the answer", w.Body.String()+fmt.Sprint(w.Header()))
			noKey(t, "the log", r.log.String())
		})
	}
}

// TestKeyNotInErrors checks an upstream that fails, with the key in its
// error (an upstream URL carrying one), leaks it into no answer or log.
func TestKeyNotInErrors(t *testing.T) {
	r := newRig(t, "healthy", Options{Key: realKey, Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Post", URL: req.URL.String() + "?key=" + realKey + "&auth=" + req.Header.Get("X-Api-Key"), Err: errors.New("connection refused")}
	})})
	w := r.do(t, "POST", "/v1/messages", `{}`, http.Header{"X-Api-Key": {placeholder}})
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), `"type":"error"`) {
		t.Errorf("answered %d %s", w.Code, w.Body)
	}
	if !strings.Contains(r.log.String(), "connection refused") {
		t.Errorf("the upstream error is not logged: %s", r.log.String())
	}
	noKey(t, "the answer", w.Body.String())
	noKey(t, "the log", r.log.String())
}

func noKey(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(s, realKey) {
		t.Errorf("%s holds the key: %s", where, s)
	}
}

// TestBodyStreamed checks a 1 MiB request body passes to the upstream
// without being held: the gateway's heap grows by far less than the body.
func TestBodyStreamed(t *testing.T) {
	const size = 1 << 20
	got := make(chan int64, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got <- n
		w.Write([]byte(`{"type":"message","model":"m","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	g, err := New(Options{Upstream: u})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(g)
	defer gs.Close()
	post := func() {
		resp, err := http.Post(gs.URL+"/v1/messages", "application/json", io.LimitReader(zeros{}, size))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n := <-got; n != size {
			t.Fatalf("the upstream got %d bytes", n)
		}
	}
	post() // the connections and buffers of the first
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	post()
	runtime.ReadMemStats(&after)
	// Every allocation of the process counts: client, gateway and
	// upstream, all here.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("a %d-byte body cost %d bytes of heap", size, alloc)
	} else {
		t.Logf("a %d-byte body cost %d bytes of heap", size, alloc)
	}
}

// zeros reads as endless '0' bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}
