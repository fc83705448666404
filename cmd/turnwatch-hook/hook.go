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

	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// CLI names --cli accepts.
const (
	cliClaude = "claude"
	cliGemini = "gemini"
	cliPlain  = "plain"
)

const (
	// stateFile remembers the numbers of the nudges shown, next to them.
	stateFile = "hook-state.json"
	// maxShown bounds the state: a turn has few nudges; past this many the
	// oldest numbers are forgotten.
	maxShown = 1024
	// maxRead bounds what is read of the nudges file (the volume's own
	// size limit is larger than any honest file).
	maxRead = 4 << 20
	// maxStdin bounds what is read of the CLI's event.
	maxStdin = 1 << 20
)

// run is the whole hook; it always returns 0 except for a usage error, so
// that a broken nudges file never breaks the agent's tool call.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("turnwatch-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cli := fs.String("cli", cliPlain, "the hook protocol: claude | gemini | plain")
	dir := fs.String("dir", or(getenv(nudgefile.EnvDir), nudgefile.Dir), "the nudges directory [$"+nudgefile.EnvDir+"]")
	block := fs.Bool("block", false, "claude: also answer \"decision\": \"block\" with the nudges as \"reason\", which Claude Code versions that read no PostToolUse additionalContext feed to the model (docs/nudges.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cli != cliClaude && *cli != cliGemini && *cli != cliPlain {
		fmt.Fprintf(stderr, "turnwatch-hook: --cli %q: want claude, gemini or plain\n", *cli)
		return 2
	}
	event := readEvent(*cli, stdin)
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
// The file is made readable by every user: the sidecar runs as its own.
func acknowledge(dir, cli, event string, recs []nudgefile.Record, now time.Time) error {
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
		b = nudgefile.EncodeAck(nudgefile.Ack{Time: now, CLI: cli, Event: event})
	}
	for _, r := range recs {
		b = append(b, nudgefile.EncodeAck(nudgefile.Ack{Seq: r.Seq, Time: now, CLI: cli, Event: event})...)
	}
	if len(b) == 0 {
		return nil
	}
	_, err = f.Write(append([]byte{'\n'}, b...)) // a torn line before ends there
	return err
}

// readEvent reads the hook event the CLI sends on stdin (claude, gemini) and
// returns its hook_event_name; plain reads nothing.
func readEvent(cli string, stdin io.Reader) string {
	if cli == cliPlain || stdin == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(stdin, maxStdin))
	var ev struct {
		Name string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(b, &ev)
	return ev.Name
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
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
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
// appended to the tool result. Plain: one line per nudge.
func render(cli, event string, recs []nudgefile.Record, block bool) []byte {
	switch cli {
	case cliClaude:
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
