package nudgefile

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
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
	// Call is the tool call's id as the CLI's stream names it.
	Call string `json:"call"`
	// Refuse is true for a call that tripped a stopping detector: the hook
	// refuses it with Message and ends the CLI's turn.
	Refuse bool `json:"refuse,omitempty"`
	// Detector and Message are the trip's, for a refused call.
	Detector string `json:"detector,omitempty"`
	Message  string `json:"message,omitempty"`
}

// EncodeVerdict is v as one line, newline included.
func EncodeVerdict(v Verdict) []byte {
	b, _ := json.Marshal(v) // strings and a bool: cannot fail
	return append(b, '\n')
}

// FindVerdict returns the verdict on call in data (VerdictFile's lines):
// the last line that names it wins, junk is skipped.
func FindVerdict(data []byte, call string) (Verdict, bool) {
	var found Verdict
	ok := false
	needle := []byte(call)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || len(line) > MaxLine || !bytes.Contains(line, needle) {
			continue
		}
		var v Verdict
		if json.Unmarshal(line, &v) != nil || v.Call != call || !utf8.ValidString(v.Message) {
			continue
		}
		found, ok = v, true
	}
	return found, ok
}
