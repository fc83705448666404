package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// CLI names --cli accepts: the hook protocols a CLI of agents.CLIs speaks
// (its Hook), and plain.
const (
	cliClaude = agents.HookClaude
	cliCodex  = agents.HookCodex
	cliGemini = agents.HookGemini
	// cliAdapter is the protocol of turnwatch's own adapters: see
	// hookEvent's Event.
	cliAdapter = agents.HookAdapter
	cliPlain   = "plain"
)

var clis = []string{cliClaude, cliCodex, cliGemini, cliAdapter, cliPlain}

const (
	// stateFile remembers the numbers of the nudges shown, next to them.
	stateFile = "hook-state.json"
	// maxShown bounds the state: a turn has few nudges; past this many the
	// oldest numbers are forgotten.
	maxShown = 1024
	// maxRead bounds what is read of the nudges file (the volume's own
	// size limit is larger than any honest file).
	maxRead = 4 << 20
	// maxStdin bounds what is read of the CLI's event: as much as the
	// sidecar reads of a line (the engine's cap) and room for the event's
	// own fields, so that the hook names a call of many megabytes as the
	// sidecar does (CallKey) instead of waiting for a verdict it cannot
	// find.
	maxStdin = monitor.DefaultMaxLine + 64<<10
)

// run is the whole hook; it always returns 0 except for a usage error, so
// that a broken nudges file never breaks the agent's tool call.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("turnwatch-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cli := fs.String("cli", cliPlain, "the hook protocol: "+strings.Join(clis, " | "))
	dir := fs.String("dir", or(getenv(nudgefile.EnvDir), nudgefile.Dir), "the nudges directory [$"+nudgefile.EnvDir+"]")
	block := fs.Bool("block", false, "claude: also answer \"decision\": \"block\" with the nudges as \"reason\", which Claude Code versions that read no PostToolUse additionalContext feed to the model (docs/nudges.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !slices.Contains(clis, *cli) {
		fmt.Fprintf(stderr, "turnwatch-hook: --cli %q: want one of %s\n", *cli, strings.Join(clis, ", "))
		return 2
	}
	ev := readEvent(*cli, stdin)
	event := ev.name()
	if ev.pre() {
		// Before the tool runs, the hook only refuses: nudges wait for the
		// hook after it, whose answer every CLI feeds to the model.
		if v, ok := refusal(*dir, *cli, ev, refuseWait(getenv, stderr), stderr); ok {
			_, _ = stdout.Write(renderRefusal(*cli, v))
			if err := acknowledgeRefusal(*dir, *cli, event, ev.id(), time.Now()); err != nil {
				fmt.Fprintf(stderr, "turnwatch-hook: acknowledging: %v\n", err)
			}
		} else {
			_, _ = stdout.Write(render(*cli, event, nil, false))
			if err := appendAcks(*dir, nil); err != nil {
				fmt.Fprintf(stderr, "turnwatch-hook: acknowledging: %v\n", err)
			}
		}
		return 0
	}
	fresh, shown, err := unseen(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "turnwatch-hook: %v\n", err)
	}
	out := render(*cli, event, fresh, *block)
	if len(out) > 0 {
		if _, err := stdout.Write(out); err != nil {
			fresh = nil // not handed over: neither marked shown nor acknowledged
		}
	}
	if err := shown.done(fresh); err != nil {
		fmt.Fprintf(stderr, "turnwatch-hook: state: %v\n", err)
	}
	if err := acknowledge(*dir, *cli, event, fresh, time.Now()); err != nil {
		fmt.Fprintf(stderr, "turnwatch-hook: acknowledging: %v\n", err)
	}
	return 0
}

// acknowledge tells the sidecar, in the volume's ack file, that the hook
// ran (a seq 0 line, the first time) and which nudges it handed to the CLI.
func acknowledge(dir, cli, event string, recs []nudgefile.Record, now time.Time) error {
	acks := make([]nudgefile.Ack, 0, len(recs))
	for _, r := range recs {
		acks = append(acks, nudgefile.Ack{Seq: r.Seq, Time: now, CLI: cli, Event: event})
	}
	return appendAcks(dir, acks)
}

// appendAcks appends acks to the ack file, after a hello line (seq 0) when
// the file is new. The file is made readable by every user: the sidecar
// runs as its own.
func appendAcks(dir string, acks []nudgefile.Ack) error {
	f, err := os.OpenFile(filepath.Join(dir, nudgefile.AckFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", nudgefile.AckFile)
	}
	_ = f.Chmod(0o644) // a umask of 077 would hide it from the sidecar
	var b []byte
	if fi.Size() == 0 {
		hello := nudgefile.Ack{Time: time.Now()}
		if len(acks) > 0 {
			hello.Time, hello.CLI, hello.Event = acks[0].Time, acks[0].CLI, acks[0].Event
		}
		b = nudgefile.EncodeAck(hello)
	}
	for _, a := range acks {
		b = append(b, nudgefile.EncodeAck(a)...)
	}
	if len(b) == 0 {
		return nil
	}
	_, err = f.Write(append([]byte{'\n'}, b...)) // a torn line before ends there
	return err
}

// ledger is the hook's memory of the nudges it showed, held under an
// exclusive lock on the state file until done, so that two hooks run at
// once (parallel tool calls) do not both show the same nudge.
type ledger struct {
	f     *os.File
	shown []int
}

// unseen returns the nudges of dir not shown yet, and the locked ledger
// that marks them shown once they were handed over (nil when there is
// none: every nudge is shown, none is marked).
func unseen(dir string) ([]nudgefile.Record, *ledger, error) {
	recs, err := readNudges(filepath.Join(dir, nudgefile.File))
	if err != nil || len(recs) == 0 {
		return nil, nil, err
	}
	st, err := os.OpenFile(filepath.Join(dir, stateFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return recs, nil, fmt.Errorf("state: %w (showing every nudge)", err)
	}
	if err := syscall.Flock(int(st.Fd()), syscall.LOCK_EX); err != nil {
		st.Close()
		return recs, nil, fmt.Errorf("state: %w", err)
	}
	l := &ledger{f: st, shown: readShown(st)}
	var fresh []nudgefile.Record
	for _, r := range recs {
		if !slices.Contains(l.shown, r.Seq) {
			fresh = append(fresh, r)
		}
	}
	return fresh, l, nil
}

// done marks recs shown (none when the handover failed) and unlocks.
func (l *ledger) done(recs []nudgefile.Record) error {
	if l == nil {
		return nil
	}
	defer l.f.Close()
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		l.shown = append(l.shown, r.Seq)
	}
	if len(l.shown) > maxShown {
		l.shown = l.shown[len(l.shown)-maxShown:]
	}
	return writeShown(l.f, l.shown)
}

// readNudges reads what can be read of the nudges file: a missing file is
// no nudge; a fifo, a device or a directory is refused; junk lines are
// skipped.
func readNudges(path string) ([]nudgefile.Record, error) {
	b, err := readBounded(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return nudgefile.Parse(b), nil
}

type state struct {
	Shown []int `json:"shown"`
}

func readShown(f *os.File) []int {
	b, _ := io.ReadAll(io.LimitReader(f, maxRead))
	var s state
	if json.Unmarshal(b, &s) != nil {
		return nil // junk state: show again rather than never
	}
	return s.Shown
}

func writeShown(f *os.File, shown []int) error {
	b, _ := json.Marshal(state{Shown: shown})
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(b, 0)
	return err
}

// text is the nudges as the agent reads them.
func text(recs []nudgefile.Record) string {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteByte('\n')
		}
		kind := "nudge"
		if r.Warning {
			kind = "warning"
		}
		fmt.Fprintf(&b, "turnwatch %s (%s, line %d): %s", kind, r.Detector, r.Line, r.Message)
	}
	return b.String()
}

// render is the hook's stdout for cli. Claude Code: a PostToolUse (or the
// event it was run for) hookSpecificOutput whose additionalContext the
// model reads; nothing when there is nothing to say. Gemini CLI: JSON is
// mandatory on stdout, so "{}" when there is nothing; additionalContext is
// appended to the tool result. Codex: Claude Code's shape. The adapters:
// {"context": TEXT}, or {} when there is nothing. Plain: one line per nudge.
func render(cli, event string, recs []nudgefile.Record, block bool) []byte {
	switch cli {
	case cliClaude, cliCodex:
		if len(recs) == 0 {
			return nil
		}
		if !claudeContextEvents[event] {
			event = "PostToolUse"
		}
		out := map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text(recs)}}
		if block && event == "PostToolUse" { // the tool already ran: "block" only shows the reason to the model
			out["decision"], out["reason"] = "block", text(recs)
		}
		return jsonLine(out)
	case cliGemini:
		if len(recs) == 0 {
			return []byte("{}\n")
		}
		return jsonLine(map[string]any{"hookSpecificOutput": map[string]any{"additionalContext": text(recs)}})
	case cliAdapter:
		if len(recs) == 0 {
			return []byte("{}\n")
		}
		return jsonLine(map[string]any{"context": text(recs)})
	}
	if len(recs) == 0 {
		return nil
	}
	return []byte(text(recs) + "\n")
}

// claudeContextEvents are the Claude Code hook events whose output may carry
// additionalContext for the model (docs/nudges.md).
var claudeContextEvents = map[string]bool{"PostToolUse": true, "PreToolUse": true, "UserPromptSubmit": true, "SessionStart": true}

func jsonLine(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// hookEvent is what a CLI's hook gets on stdin: Claude Code's and Codex's
// and Gemini CLI's event fields, and the adapters' (cliAdapter).
type hookEvent struct {
	Name      string          `json:"hook_event_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	// The adapters' protocol: Event is "pre" before a tool call, "post"
	// after it; Call is the call's id as the CLI's stream names it, Tool
	// and Args its tool and arguments.
	Event string          `json:"event"`
	Call  string          `json:"call"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
	// NoWait asks for the verdict as it stands, without waiting.
	NoWait bool `json:"nowait"`
}

// readEvent reads the hook event the CLI sends on stdin; plain reads
// nothing.
func readEvent(cli string, stdin io.Reader) hookEvent {
	var ev hookEvent
	if cli == cliPlain || stdin == nil {
		return ev
	}
	b, _ := io.ReadAll(io.LimitReader(stdin, maxStdin))
	_ = json.Unmarshal(b, &ev)
	return ev
}

// name is the CLI's name for the event.
func (e hookEvent) name() string { return or(e.Name, e.Event) }

// pre says the event comes before the tool runs.
func (e hookEvent) pre() bool {
	return e.Name == "PreToolUse" || e.Name == "BeforeTool" || e.Event == "pre"
}

// id is the call's id, when the CLI passes one (Gemini CLI does not).
func (e hookEvent) id() string { return or(e.ToolUseID, e.Call) }

// tool is the call's tool name and arguments.
func (e hookEvent) tool() (string, []byte) {
	if e.ToolName != "" {
		return e.ToolName, e.ToolInput
	}
	return e.Tool, e.Args
}
