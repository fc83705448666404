package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// react is `fakeagent react`: a live agent (not a replay) that prints Claude
// Code's stream-json and, like Claude Code, runs the PostToolUse hooks of a
// --settings file after each tool call: the event as JSON on the hook's
// stdin, its stdout read back as JSON, whose
// hookSpecificOutput.additionalContext the model "reads" (exit 2: stderr is
// read instead). What it does with a turnwatch nudge is --react:
//
//	changes   loops on one identical call; once warned, it changes course and finishes
//	stubborn  loops on one identical call and ignores every warning
//	silent    works without a word; once nudged, it speaks (reports) and finishes
//
// When it reads a nudge it says, in its next message, how long after the
// line the nudge names it came ("nudge latency 812ms"), so that a test can
// read the latency from the log.
//
//	fakeagent react --react changes --settings /etc/agent/settings.json [--every 1s] [--calls 30]
func react(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("react", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("react", "changes", "changes | stubborn | silent")
	settings := fs.String("settings", "", "Claude Code settings file with hooks.PostToolUse (as claude --settings)")
	every := fs.Duration("every", time.Second, "time between two tool calls")
	calls := fs.Int("calls", 30, "most tool calls before the agent gives up and finishes")
	inspect := fs.String("inspect", "", "before the result, say (as a text message) what this directory holds and whether a token is readable (inspect.go)")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if *mode != "changes" && *mode != "stubborn" && *mode != "silent" {
		fmt.Fprintf(stderr, "fakeagent react: --react %q: want changes, stubborn or silent\n", *mode)
		return 2
	}
	hooks, err := loadHooks(*settings)
	if err != nil {
		fmt.Fprintln(stderr, "fakeagent react:", err)
		return 2
	}
	a := &liveAgent{out: stdout, hooks: hooks, session: "fake-session", start: time.Now(), inspect: *inspect}
	a.run(*mode, *every, *calls)
	return 0
}

// hookCommand is one configured command hook.
type hookCommand struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout"` // seconds
}

// loadHooks reads the PostToolUse command hooks of a Claude Code settings
// file ({"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":...}]}]}}).
func loadHooks(path string) ([]hookCommand, error) {
	if path == "" {
		return nil, nil
	}
	b := []byte(path) // like claude --settings: a file, or the JSON itself
	if !strings.HasPrefix(strings.TrimSpace(path), "{") {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type string `json:"type"`
				hookCommand
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	var out []hookCommand
	for _, group := range s.Hooks["PostToolUse"] {
		for _, h := range group.Hooks {
			if h.Type == "command" && h.Command != "" {
				out = append(out, h.hookCommand)
			}
		}
	}
	return out, nil
}

type liveAgent struct {
	out     io.Writer
	hooks   []hookCommand
	session string
	start   time.Time
	lines   int
	printed []time.Time // when each line (1-based: printed[n-1]) went out
	n       int         // ids
	heard   []string    // what the hooks said, in order
	inspect string      // a directory to look into before the result
}

func (a *liveAgent) emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(a.out, "%s\n", b)
	a.lines++
	a.printed = append(a.printed, time.Now())
}

func (a *liveAgent) id(p string) string { a.n++; return fmt.Sprintf("%s_%04d", p, a.n) }

// call prints one tool-only assistant message, its result, and runs the
// hooks; it returns what they said.
func (a *liveAgent) call(tool string, input map[string]any) string {
	id := a.id("toolu")
	a.emit(map[string]any{"type": "assistant", "session_id": a.session, "parent_tool_use_id": nil, "message": map[string]any{
		"id": a.id("msg"), "role": "assistant", "model": claudeModel, "stop_reason": "tool_use",
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}},
		"usage":   map[string]any{"input_tokens": 100, "output_tokens": 20}}})
	a.emit(map[string]any{"type": "user", "session_id": a.session, "parent_tool_use_id": nil, "message": map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "FAIL: TestX", "is_error": false}}}})
	return a.runHooks(tool, id, input)
}

func (a *liveAgent) say(text, stop string) {
	a.emit(map[string]any{"type": "assistant", "session_id": a.session, "parent_tool_use_id": nil, "message": map[string]any{
		"id": a.id("msg"), "role": "assistant", "model": claudeModel, "stop_reason": stop,
		"content": []any{map[string]any{"type": "text", "text": text}},
		"usage":   map[string]any{"input_tokens": 100, "output_tokens": 20}}})
}

func (a *liveAgent) result() {
	if a.inspect != "" {
		a.say("inspect: "+inspectDir(a.inspect), "end_turn")
	}
	a.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": a.session,
		"duration_ms": time.Since(a.start).Milliseconds(), "total_cost_usd": 0.01, "num_turns": a.n})
}

// runHooks runs each PostToolUse hook as Claude Code does and returns the
// context they give the model.
func (a *liveAgent) runHooks(tool, id string, input map[string]any) string {
	var said []string
	for _, h := range a.hooks {
		ev, _ := json.Marshal(map[string]any{"session_id": a.session, "transcript_path": "/tmp/transcript.jsonl", "cwd": "/",
			"hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": id,
			"tool_response": map[string]any{"stdout": "FAIL: TestX"}})
		if s := runHook(h, ev); s != "" {
			said = append(said, s)
		}
	}
	s := strings.Join(said, "\n")
	if s != "" {
		a.heard = append(a.heard, s)
	}
	return s
}

// runHook runs one command: through sh when the image has one (Claude Code
// runs hook commands in a shell), else split on spaces (the fake agent's
// image has no shell).
func runHook(h hookCommand, event []byte) string {
	timeout := 60 * time.Second
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	if _, err := os.Stat("/bin/sh"); err == nil {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	} else {
		f := strings.Fields(h.Command)
		if len(f) == 0 {
			return ""
		}
		cmd = exec.CommandContext(ctx, f[0], f[1:]...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(event), &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return strings.TrimSpace(stderr.String())
	}
	if err != nil {
		return ""
	}
	var out struct {
		H struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(stdout.Bytes(), &out) != nil {
		return ""
	}
	return out.H.Context
}

var nudgeLine = regexp.MustCompile(`\(([A-Za-z]+), line ([0-9]+)\)`)

// latency is how long after the line a nudge names the agent read it.
func (a *liveAgent) latency(context string) string {
	m := nudgeLine.FindStringSubmatch(context)
	if m == nil {
		return "nudge latency unknown"
	}
	n, _ := strconv.Atoi(m[2])
	if n < 1 || n > len(a.printed) {
		return "nudge latency unknown"
	}
	return fmt.Sprintf("nudge latency %dms (%s at line %s)", time.Since(a.printed[n-1]).Milliseconds(), m[1], m[2])
}

func (a *liveAgent) run(mode string, every time.Duration, calls int) {
	a.emit(map[string]any{"type": "system", "subtype": "init", "session_id": a.session, "model": claudeModel,
		"tools": []string{"Bash", "Read"}, "cwd": "/workspace"})
	a.say("Let me run the tests.", "tool_use")
	warned := false
	for i := 0; i < calls; i++ {
		time.Sleep(every)
		var heard string
		if mode == "silent" {
			heard = a.call("Read", map[string]any{"file_path": fmt.Sprintf("/workspace/f%d.go", i)})
		} else {
			heard = a.call("Bash", map[string]any{"command": "go test ./..."})
		}
		if heard == "" || !strings.Contains(heard, "turnwatch") {
			continue
		}
		switch {
		case mode == "stubborn":
			continue // heard it, loops on
		case mode == "silent" || !warned:
			warned = true
			a.say("I was told: "+heard+" -- "+a.latency(heard)+". Changing course: reporting what blocks me.", "tool_use")
			time.Sleep(every)
			a.call("Read", map[string]any{"file_path": "/workspace/README.md"})
			a.say("Report: the test fails on a missing fixture; I stop here.", "end_turn")
			a.result()
			return
		}
	}
	a.say("Giving up after "+strconv.Itoa(calls)+" calls.", "end_turn")
	a.result()
}
