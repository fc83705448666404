package gateway

import (
	"io"
	"strings"
	"testing"
)

func TestToolsScan(t *testing.T) {
	tests := []struct {
		name, body string
		tools      bool
	}{
		{"anthropic with tools", `{"model":"m","messages":[],"tools":[{"name":"Bash"}]}`, true},
		{"spaced", "{ \"tools\" :\n [ {\"name\":\"x\"} ] }", true},
		{"empty tools", `{"model":"m","tools":[],"messages":[{"role":"user","content":"hi"}]}`, false},
		{"empty tools, spaced", `{"tools": [ ] }`, false},
		{"no tools", `{"model":"m","messages":[{"role":"user","content":"title this"}]}`, false},
		{"tools nested only", `{"messages":[{"content":{"tools":[1]}}]}`, false},
		{"the word in a value", `{"system":"tools","messages":["tools"]}`, false},
		{"a key that holds a quote", `{"a\"tools":[1]}`, true},
		{"an escaped key", `{"\u0074ools":[{"name":"x"}]}`, true},
		{"tools not an array", `{"tools":null}`, false},
		{"gemini", `{"contents":[],"tools":[{"functionDeclarations":[]}]}`, true},
		{"a longer key", `{"toolsx":[1]}`, false},
		{"a shorter key", `{"tool":[1]}`, false},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 3, len(tt.body)} {
			s := &toolsScan{rc: io.NopCloser(&chunked{r: strings.NewReader(tt.body), n: chunk})}
			b, err := io.ReadAll(s)
			if err != nil || string(b) != tt.body {
				t.Fatalf("%s: the body changed: %q %v", tt.name, b, err)
			}
			if s.offersTools() != tt.tools {
				t.Errorf("%s, %d-byte reads: tools %v, want %v", tt.name, chunk, s.offersTools(), tt.tools)
			}
		}
	}
}

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// A request that offers no tools (a title, a CLI's own check) is a side
// request: its events say so, and a request with tools is the turn's.
func TestSideRequests(t *testing.T) {
	r := newRig(t, "whitespace", Options{Deltas: true})
	side := `{"model":"m","stream":true,"messages":[{"role":"user","content":"a title for this"}]}`
	main := `{"model":"m","stream":true,"messages":[{"role":"user","content":"do it"}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`
	for _, body := range []string{side, main} {
		if w := r.do(t, "POST", "/v1/messages", body, nil); w.Code != 200 {
			t.Fatalf("HTTP %d %s", w.Code, w.Body)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ends []bool
	deltas := map[bool]int{}
	for _, e := range r.events {
		if e.End {
			ends = append(ends, e.Side)
		} else {
			deltas[e.Side]++
		}
	}
	if len(ends) != 2 || !ends[0] || ends[1] {
		t.Errorf("ends' Side %v, want [true false]", ends)
	}
	if deltas[false] == 0 {
		t.Errorf("deltas by Side %v: the turn's answer's deltas are not the turn's", deltas)
	}
}
