package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

const (
	// callsFile counts, per tool name and arguments, the calls the hook saw
	// before the tool ran, for CLIs that pass no call id (CallKey).
	callsFile = "hook-calls.json"
	// pollEvery is how often the hook looks for the sidecar's verdict.
	pollEvery = 10 * time.Millisecond
)

// refuseWait is how long to wait for the sidecar's verdict: the env the
// controller sets where refusing is on; unset (or junk), 0: do not wait.
func refuseWait(getenv func(string) string, stderr io.Writer) time.Duration {
	s := getenv(nudgefile.EnvRefuseWait)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		fmt.Fprintf(stderr, "turnwatch-hook: $%s %q: not a duration; refusing nothing\n", nudgefile.EnvRefuseWait, s)
		return 0
	}
	return d
}

// refusal waits, at most wait, for the sidecar's verdict on the call ev is
// about, and returns it when it refuses the call. Past wait the call runs
// (fail open), and stderr says so. A wait of 0 is refusing off; an adapter
// event with nowait looks once (its CLI shows a call only after it ran).
func refusal(dir, cli string, ev hookEvent, wait time.Duration, stderr io.Writer) (nudgefile.Verdict, bool) {
	if wait <= 0 {
		return nudgefile.Verdict{}, false
	}
	if ev.NoWait || cli == cliCodex {
		wait = 0 // the CLI shows the call only after it ran: no verdict can come first
	}
	id, key := ev.id(), ""
	if id == "" {
		name, args := ev.tool()
		key = nudgefile.CallKey(name, args, countCall(dir, name, args))
	}
	deadline := time.Now().Add(wait)
	for {
		b, _ := readTail(filepath.Join(dir, nudgefile.VerdictFile))
		if v, ok := nudgefile.FindVerdict(b, id, key); ok {
			return v, v.Refuse
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "turnwatch-hook: no verdict on call %q within %v: it runs\n", or(id, key), wait)
			return nudgefile.Verdict{}, false
		}
		time.Sleep(pollEvery)
	}
}

// countCall returns how many calls with this tool and these arguments the
// hook has seen before the tool ran, this one included, under an exclusive
// lock on the count file; 0 (no key matches) when it cannot keep count.
func countCall(dir, name string, args []byte) int {
	f, err := os.OpenFile(filepath.Join(dir, callsFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return 0
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil {
		return 0
	}
	counts := map[string]int{}
	b, _ := io.ReadAll(io.LimitReader(f, maxRead))
	_ = json.Unmarshal(b, &counts) // junk: start over
	sig := nudgefile.CallKey(name, args, 0)
	counts[sig]++
	out, _ := json.Marshal(counts)
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt(out, 0)
	}
	return counts[sig]
}

// readTail reads the last maxRead bytes of a regular file of the volume,
// from the first whole line in them: the verdicts file grows with the
// turn's calls, and the lines that matter are the last (the newest call's,
// the * line; the last line that names a call wins).
func readTail(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	from := max(fi.Size()-maxRead, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, from, maxRead))
	if from > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // the line cut at from
		} else {
			b = nil
		}
	}
	return b, err
}

// readBounded reads a regular file of the volume, at most maxRead bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, maxRead))
}

// refusalText is what the CLI, and the model, read of a refused call.
func refusalText(v nudgefile.Verdict) string {
	return fmt.Sprintf("turnwatch refused this call (%s): %s; the turn is stopped", v.Detector, v.Message)
}

// renderRefusal is the hook's answer that refuses the call and ends the
// CLI's turn: Claude Code denies it and stops (continue false); Gemini CLI
// the same in its words; the adapters are told to abort. Codex only
// denies: no answer of a PreToolUse hook ends its turn.
func renderRefusal(cli string, v nudgefile.Verdict) []byte {
	text := refusalText(v)
	switch cli {
	case cliCodex: // Codex ignores a PreToolUse answer that holds "continue" at all
		return jsonLine(map[string]any{
			"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": text},
		})
	case cliClaude:
		return jsonLine(map[string]any{
			"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": text},
			"continue":           false, "stopReason": text,
		})
	case cliGemini:
		return jsonLine(map[string]any{"decision": "deny", "reason": text, "continue": false, "stopReason": text})
	case cliAdapter:
		return jsonLine(map[string]any{"refuse": true, "message": text})
	}
	return []byte(text + "\n")
}

// acknowledgeRefusal records, beside the nudges' acks, that the hook
// refused a call (the drill's "call refused"); like every ack, the agent
// could forge it, and it decides nothing.
func acknowledgeRefusal(dir, cli, event, call string, now time.Time) error {
	return appendAcks(dir, []nudgefile.Ack{{Time: now, CLI: cli, Event: event, Refused: or(call, "?")}})
}
