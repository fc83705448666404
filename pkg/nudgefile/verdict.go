package nudgefile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// VerdictFile is where the sidecar writes its verdict on each tool call it
// judged, in Dir, for the agent's pre-tool hook (refuse): one JSON line per
// call, written when the stream showed the call whole, before the CLI runs
// it. The hook waits for its call's line, at most refuseWait, and refuses
// the call when the line says so.
//
// The agent can write this file too. The sidecar never reads it back: the
// trip it reports comes from the agent's stream alone, so a forged or
// deleted verdict can refuse or let through only the agent's own call,
// never silence a trip or stop another Pod's agent (each Pod has its own
// volume).
const VerdictFile = "verdicts.jsonl"

// Verdict is one line of VerdictFile.
type Verdict struct {
	// Call is the tool call's id as the CLI's stream names it; CallAll
	// ("*") is the verdict on every call not judged by a line of its own:
	// written once a trip ended the turn.
	Call string `json:"call"`
	// Key names the call for a hook whose CLI passes no call id (Gemini
	// CLI's BeforeTool): CallKey of its tool name, arguments and how many
	// calls with both came before it in the turn.
	Key string `json:"key,omitempty"`
	// Refuse is true for a call that tripped a stopping detector: the hook
	// refuses it with Message and ends the CLI's turn.
	Refuse bool `json:"refuse,omitempty"`
	// Detector and Message are the trip's, for a refused call.
	Detector string `json:"detector,omitempty"`
	Message  string `json:"message,omitempty"`
}

// CallAll is Verdict.Call for every call the file names no verdict for.
const CallAll = "*"

// CallKey names the nth call (from 1) of the turn with this tool name and
// these JSON arguments, whatever their spacing, key order, escapes and
// number spellings: the sidecar reads them from the stream, the hook from
// its CLI's event. The arguments go in as their digest (monitor.ArgsDigest),
// read once without a copy, so a call of many megabytes costs the sidecar
// no memory (docs/nudges.md#refusing-the-tripping-call).
func CallKey(name string, args []byte, n int) string {
	return KeyOf(name, monitor.ArgsDigest(args), n)
}

// KeyOf is CallKey of the arguments whose digest is args.
func KeyOf(name string, args uint64, n int) string {
	return name + " " + fmt.Sprintf("%016x", args) + " " + strconv.Itoa(n)
}

// EncodeVerdict is v as one line, newline included.
func EncodeVerdict(v Verdict) []byte {
	b, _ := json.Marshal(v) // strings and a bool: cannot fail
	return append(b, '\n')
}

// FindVerdict returns the verdict in data (VerdictFile's lines) on the call
// with this id (or, for an empty id, this key), else the CallAll verdict:
// the last line that names the call wins, junk is skipped.
func FindVerdict(data []byte, call, key string) (Verdict, bool) {
	var found, all Verdict
	ok, allOK := false, false
	eachLine(data, func(line []byte) {
		var v Verdict
		if json.Unmarshal(line, &v) != nil || !utf8.ValidString(v.Message) {
			return
		}
		switch {
		case v.Call == CallAll:
			all, allOK = v, true
		case call != "" && v.Call == call, call == "" && key != "" && v.Key == key:
			found, ok = v, true
		}
	})
	if ok {
		return found, true
	}
	return all, allOK
}
