package scriptedmodel

import (
	"encoding/json"
	"strings"
)

// Conversation is one request, normalized across the four APIs.
type Conversation struct {
	// API is the dialect the request came in: one of the API constants.
	API string
	// Model is the model the CLI asked for.
	Model string
	// Stream is whether the CLI asked for a streamed answer.
	Stream bool
	// System is the system prompt (instructions), joined.
	System string
	// Messages is the history, oldest first, system prompt excluded.
	Messages []Message
	// Tools are the tools the request offers the model.
	Tools []Tool
	// Schema is the JSON schema an answer must follow (Gemini CLI's own
	// checks ask for structured output); nil when free text is wanted.
	Schema json.RawMessage
}

// Message is one message of the history.
type Message struct {
	// Role is "user" or "assistant" (tool answers are user messages).
	Role string
	// Text is the message's text, joined.
	Text string
	// Calls are the tool calls an assistant message made.
	Calls []Call
	// Results are the tool answers a user message carries.
	Results []Result
}

// Call is a tool call.
type Call struct {
	ID   string
	Name string
	// Args is the call's arguments as a JSON object.
	Args json.RawMessage
}

// Result is a tool's answer.
type Result struct {
	CallID  string
	Text    string
	IsError bool
}

// Tool is a tool the request offers.
type Tool struct {
	Name string
	// Schema is the tool's input schema (JSON Schema object), as sent.
	Schema json.RawMessage
}

// Step is how many tool answers follow the model's last final answer (an
// assistant message without tool calls), or the start: the position of the
// reply in the scenario's script. A continued conversation starts over at
// 0 after the earlier turn's answer. (Counting from the last prompt instead
// fails: Claude Code adds user messages of its own between tool answers in
// a resumed session.)
func (c *Conversation) Step() int {
	n := 0
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role == "assistant" && len(m.Calls) == 0 && strings.TrimSpace(m.Text) != "" {
			break
		}
		n += len(m.Results)
	}
	return n
}

// Prompts counts the user messages that carry a prompt (not only tool
// answers): 1 for a fresh conversation, more for a continued one.
func (c *Conversation) Prompts() int {
	n := 0
	for _, m := range c.Messages {
		if m.Role == "user" && len(m.Results) == 0 && strings.TrimSpace(m.Text) != "" {
			n++
		}
	}
	return n
}

// Fresh reports whether the request starts a conversation: nothing the
// model said or a tool answered is in it (a CLI may send several prompts:
// its own context, then the task).
func (c *Conversation) Fresh() bool {
	for _, m := range c.Messages {
		if m.Role == "assistant" || len(m.Results) > 0 {
			return false
		}
	}
	return true
}

// LastResult is the newest tool answer, if any.
func (c *Conversation) LastResult() (Result, bool) {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if r := c.Messages[i].Results; len(r) > 0 {
			return r[len(r)-1], true
		}
	}
	return Result{}, false
}

// Tool finds an offered tool by name.
func (c *Conversation) Tool(name string) (Tool, bool) {
	for _, t := range c.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// shellToolNames are the CLIs' shell tools, in the order they are looked for.
var shellToolNames = []string{"Bash", "bash", "run_shell_command", "exec_command", "shell", "shell_command"}

// shellTool is the offered tool that runs a shell command.
func (c *Conversation) shellTool() (Tool, bool) {
	for _, n := range shellToolNames {
		if t, ok := c.Tool(n); ok {
			return t, true
		}
	}
	return Tool{}, false
}

// subagentToolNames are Claude Code's tools that start a subagent.
var subagentToolNames = []string{"Task", "Agent"}

func (c *Conversation) subagentTool() (Tool, bool) {
	for _, n := range subagentToolNames {
		if t, ok := c.Tool(n); ok {
			return t, true
		}
	}
	return Tool{}, false
}
