package scriptedmodel

import (
	"encoding/json"
	"fmt"
)

// Stop is why a reply ended, in the scripted model's own words; each API
// spells it its own way.
type Stop string

const (
	StopEnd    Stop = "end"
	StopTool   Stop = "tool"
	StopLength Stop = "length"
)

// Reply is what the model answers to one request.
type Reply struct {
	// Thinking and Text are streamed as deltas, in that order.
	Thinking []string
	Text     []string
	// Calls are tool calls made after the text.
	Calls []Call
	// Stop is why the reply ended.
	Stop Stop
	// Input and Output are the tokens the reply reports as used.
	Input, Output int
	// Status, when not 0, answers with that HTTP error instead.
	Status int
	// Pause, when set, stalls the stream after its first delta until the
	// client goes away or the server's pause passes.
	Pause bool
}

// text is a reply of one text delta that ends the turn.
func text(s string) Reply { return Reply{Text: []string{s}, Stop: StopEnd} }

// callTool is a reply that calls one tool with the given arguments.
func callTool(name string, args any) Reply {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err) // the scenarios' own arguments always marshal
	}
	return Reply{Calls: []Call{{Name: name, Args: b}}, Stop: StopTool}
}

// shell is a reply that runs cmd with the request's shell tool, filling the
// arguments its schema asks for; with no shell tool it says so as text.
func shell(c *Conversation, cmd string) Reply {
	t, ok := c.shellTool()
	if !ok {
		return text("(the scripted model found no shell tool in this request)")
	}
	return callTool(t.Name, shellArgs(t.Schema, cmd))
}

// readToolNames are the CLIs' file-reading tools, in the order looked for.
var readToolNames = []string{"Read", "read_file", "read"}

// readFile is a reply that reads path with the request's read tool (its
// path argument named as the schema names it), or with cat when there is
// no read tool (codex).
func readFile(c *Conversation, path string, attempt int) Reply {
	for _, n := range readToolNames {
		t, ok := c.Tool(n)
		if !ok {
			continue
		}
		var s schema
		_ = json.Unmarshal(t.Schema, &s)
		for _, key := range []string{"file_path", "filePath", "absolute_path", "path"} {
			if _, ok := s.Properties[key]; ok {
				args := map[string]any{key: path}
				// A different offset each time: a different call, the same
				// error (not an identical-call streak).
				for _, off := range []string{"offset", "start_line"} {
					if _, ok := s.Properties[off]; ok {
						args[off] = attempt
						break
					}
				}
				return callTool(t.Name, args)
			}
		}
	}
	return shell(c, fmt.Sprintf("cat %s # attempt %d", path, attempt))
}

// schema is the part of a JSON Schema object shellArgs reads.
type schema struct {
	Properties map[string]struct {
		Type any `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// shellArgs builds a shell call's arguments from its tool's schema: the
// command under "command" or "cmd" (as an argv when the schema wants an
// array), and a placeholder for every other required string.
func shellArgs(raw json.RawMessage, cmd string) map[string]any {
	var s schema
	_ = json.Unmarshal(raw, &s) // a schema we cannot read gets "command"
	args := map[string]any{}
	key := "command"
	if _, ok := s.Properties["cmd"]; ok {
		if _, has := s.Properties["command"]; !has {
			key = "cmd"
		}
	}
	if typeOf(s.Properties[key].Type) == "array" {
		args[key] = []string{"bash", "-lc", cmd}
	} else {
		args[key] = cmd
	}
	for _, r := range s.Required {
		if _, set := args[r]; set {
			continue
		}
		switch typeOf(s.Properties[r].Type) {
		case "string", "":
			args[r] = "scripted step"
		case "boolean":
			args[r] = false
		case "number", "integer":
			args[r] = 0
		}
	}
	return args
}

// typeOf reads a schema's "type", which may be a list.
func typeOf(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// repeat returns n copies of s as separate deltas.
func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// callID names the i-th call of a reply to a request of n messages.
func callID(prefix string, n, i int) string { return fmt.Sprintf("%s%d_%d", prefix, n, i) }
