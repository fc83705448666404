package scriptedmodel

import (
	"fmt"
	"slices"
	"strings"
)

// Scenario is one script the model plays. Its reply depends only on the
// conversation in the request (see Conversation.Step).
type Scenario struct {
	// Name is how tests, the sidecar's flag and the drill name it.
	Name string
	// Plays says in a sentence what the model does.
	Plays string
	// Detector and Class are the verdict the scenario must get from the
	// default guards (with Guards set); both empty for a healthy turn, Class
	// "agent-error" alone for a failure the CLI reports.
	Detector, Class string
	// Guards are the guards the scenario needs beyond the defaults, as a
	// guards file's JSON object ("" when the defaults catch it).
	Guards string
	// Formats, when set, are the only stream formats whose CLI has what the
	// scenario plays (a subagent tool).
	Formats []string
	// reply answers one request of the main conversation.
	reply func(c *Conversation, p *play) Reply
}

// The task every scenario pretends to work on: the samples' own prompt.
const (
	readCmd   = "cat /etc/os-release"
	answer    = "This container runs the Linux distribution named in /etc/os-release."
	loopCalls = 8
	// subagentPrompt is the task subagentLoop gives its subagent: a request
	// whose first prompt it is comes from the subagent.
	subagentPrompt = "Run cat /etc/os-release and report what it says."
)

// Scenarios is the table of every scenario, in the order the drill runs them.
// The lengths in Plays are at the default guards; the loops and the
// degenerations play past the guards the server was given (sized.go).
var Scenarios = []Scenario{
	{Name: "healthy", Plays: "reads /etc/os-release once and answers",
		reply: func(c *Conversation, _ *play) Reply {
			if c.Step() == 0 {
				return shell(c, readCmd)
			}
			return text(answer)
		}},
	{Name: "identicalLoop", Plays: "makes the same shell call 8 times",
		Detector: "identicalCalls", Class: "runaway",
		reply: func(c *Conversation, p *play) Reply {
			if c.Step() < p.identicalCalls() {
				return shell(c, readCmd)
			}
			return text(answer)
		}},
	{Name: "cycle", Plays: "alternates two shell calls, 8 times each",
		Detector: "cycles", Class: "runaway", Guards: `{"cycleRepeats": 4}`,
		reply: func(c *Conversation, p *play) Reply {
			cmds := []string{readCmd, "cat /etc/hostname"}
			if s := c.Step(); s < 2*p.cycleAlternations() {
				return shell(c, cmds[s%2])
			}
			return text(answer)
		}},
	{Name: "silentRun", Plays: "makes 16 different shell calls without a word, and more until told of the nudge (at most 16 more)",
		Detector: "silentRun",
		reply: func(c *Conversation, p *play) Reply {
			if s := c.Step(); s < p.silentCalls() || s < p.silentCalls()+silentWait && !c.Contains(silentNudge) {
				return shell(c, fmt.Sprintf("echo step %d", s+1))
			}
			return text(answer)
		}},
	{Name: "repeatedErrors", Plays: "reads a file that does not exist, 8 times, each with other words",
		Detector: "repeatedErrors", Class: "runaway",
		reply: func(c *Conversation, p *play) Reply {
			if s := c.Step(); s < p.errorCalls() {
				return readFile(c, "/nonexistent/turnwatch-scripted", s+1)
			}
			return text(answer)
		}},
	{Name: "whitespace", Plays: "streams whitespace-only thinking and text deltas",
		Detector: "degeneration", Class: "degenerate",
		reply: func(c *Conversation, p *play) Reply { return p.whitespaceReply() }},
	{Name: "repetition", Plays: "streams the same sentence over and over",
		Detector: "repetition", Class: "degenerate",
		// 120 copies at the default guard: 4920 bytes, past its 4096 (see
		// repetitionReply for pi's log size).
		reply: func(c *Conversation, p *play) Reply { return p.repetitionReply() }},
	{Name: "lengthStop", Plays: "answers until the output-length limit",
		Detector: "lengthStop", Class: "length",
		reply: func(c *Conversation, _ *play) Reply {
			return Reply{Text: []string{"The answer is long, and it goes on"}, Stop: StopLength, Output: 32000}
		}},
	{Name: "apiError", Plays: "answers every request with an HTTP error (400 unless set)",
		Class: "agent-error",
		reply: func(c *Conversation, p *play) Reply {
			return Reply{Status: p.errorStatus}
		}},
	// 15s: opencode prints nothing for its first seconds, longer than a
	// shorter timeout, before it asks the model anything.
	{Name: "stall", Plays: "stops streaming in the middle of a message",
		Detector: "stall", Class: "stalled", Guards: `{"stallTimeout": "15s"}`,
		reply: func(c *Conversation, _ *play) Reply {
			return Reply{Text: []string{"Let me look at ", "the file."}, Stop: StopEnd, Pause: true}
		}},
	{Name: "overspend", Plays: "reports 150,000 input tokens on each of 6 calls",
		Detector: "spend", Class: "overspend", Guards: `{"maxCostUSD": "0.10"}`,
		reply: func(c *Conversation, _ *play) Reply {
			// Below every CLI's context window: a CLI that compacts its
			// history would start the script over.
			r := text(answer)
			if s := c.Step(); s < 5 {
				r = shell(c, fmt.Sprintf("echo part %d", s+1))
			}
			r.Input = 150_000
			return r
		}},
	{Name: "subagentLoop", Plays: "starts a subagent (claude's Task) that repeats one call",
		Detector: "identicalCalls", Class: "runaway", Formats: []string{"claude"},
		reply: func(c *Conversation, p *play) Reply {
			// Claude Code wraps the subagent's prompt in context of its own.
			if strings.Contains(firstPrompt(c), subagentPrompt) {
				if c.Step() < p.identicalCalls() {
					return shell(c, readCmd)
				}
				return text(answer)
			}
			if t, ok := c.subagentTool(); ok && c.Step() == 0 {
				return callTool(t.Name, map[string]any{"description": "Check the OS", "prompt": subagentPrompt, "subagent_type": "general-purpose"})
			}
			return text(answer)
		}},
}

// Lookup finds a scenario by name.
func Lookup(name string) (Scenario, error) {
	i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, fmt.Errorf("unknown scenario %q (one of %v)", name, Names())
	}
	return Scenarios[i], nil
}

// Names lists the scenarios' names in table order.
func Names() []string {
	out := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		out[i] = s.Name
	}
	return out
}

// firstPrompt is the text of the conversation's first prompt.
func firstPrompt(c *Conversation) string {
	for _, m := range c.Messages {
		if m.Role == "user" && len(m.Results) == 0 {
			return strings.TrimSpace(m.Text)
		}
	}
	return ""
}

// Applies reports whether the scenario can play to a CLI of format.
func (s Scenario) Applies(format string) bool {
	return len(s.Formats) == 0 || slices.Contains(s.Formats, format)
}
