package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// drillSystem stands in for a CLI's system prompt and tools: a request of
// about the size a real CLI sends (tens of KB).
var drillSystem = strings.Repeat("You are a coding agent. Use the tools to answer. ", 400)

// playDrill plays the drill's scenario through the model on port once, as
// an agent speaking Anthropic Messages would: a prompt, then each tool call
// answered, until the model answers with text (or 64 steps). It returns
// the requests made.
func playDrill(port int) (int, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/messages", port)
	msgs := []any{map[string]any{"role": "user", "content": "What OS is this?"}}
	tools := []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}}}}
	for n := 1; n <= 64; n++ {
		body, _ := json.Marshal(map[string]any{"model": "m", "stream": false, "system": drillSystem, "messages": msgs, "tools": tools})
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return n, err
		}
		var out struct {
			Content []struct {
				Type string          `json:"type"`
				ID   string          `json:"id"`
				Name string          `json:"name"`
				In   json.RawMessage `json:"input"`
			} `json:"content"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			return n, err
		}
		var calls, results []any
		for _, c := range out.Content {
			if c.Type == "tool_use" {
				calls = append(calls, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.In})
				results = append(results, map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": "NAME=Debian"})
			}
		}
		if len(calls) == 0 {
			return n, nil
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": calls}, map[string]any{"role": "user", "content": results})
	}
	return 64, nil
}
