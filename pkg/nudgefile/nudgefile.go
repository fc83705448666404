// Package nudgefile is the file through which nudges reach the agent
// (docs/nudges.md#nudgesjsonl): the sidecar appends one JSON line
// per nudge to nudges.jsonl in a volume it shares with the agent, and
// turnwatch-hook, run by the agent CLI's hook as the agent's user, prints
// the ones it has not shown yet.
//
// The volume is the agent's as much as the sidecar's: the agent may write,
// truncate, replace or delete anything in it, plant symlinks and fifos.
// So the sidecar only ever writes there (never reads what it finds), opens
// nothing through a symlink, refuses anything but a regular file, and holds
// nothing of its credential there; the reader treats every line as
// untrusted text and skips what it cannot read.
package nudgefile

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

const (
	// Dir is where the volume is mounted, in the agent and in the sidecar.
	Dir = "/run/turnwatch"
	// File is the nudges file's name in Dir.
	File = "nudges.jsonl"
	// HookPath is where the sidecar puts turnwatch-hook, relative to Dir.
	HookPath = "bin/turnwatch-hook"
	// ReadyFile is written in Dir once the sidecar put turnwatch-hook and
	// the Adapters there (or tried to: a failure is logged, and the turn
	// warns HooksNotRun). The sidecar's startupProbe (turnwatch-sidecar
	// probe) waits for it, so an agent, which starts only after the probe
	// passed, finds its hook files in place.
	ReadyFile = "ready"
	// EnvDir tells the sidecar (and the agent) where the volume is; unset,
	// nudges are not delivered.
	EnvDir = "TURNWATCH_NUDGE_DIR"
	// EnvRefuseWait tells the agent's pre-tool hook how long to wait for
	// the sidecar's verdict on its call (guards.refuseWait); unset, refusing
	// is off and the hook does not wait.
	EnvRefuseWait = "TURNWATCH_REFUSE_WAIT"
	// Volume is the shared volume's name: the reserved prefix keeps any
	// template from naming or mounting it.
	Volume = "turnwatch-nudges"
	// MaxMessage bounds a nudge's message, in bytes, on both sides.
	MaxMessage = 4096
	// MaxLine bounds a line the reader keeps; longer ones are junk.
	MaxLine = 16384
)

// Record is one line of nudges.jsonl.
type Record struct {
	// Seq numbers the turn's nudges from 1, in the order the engine said
	// them; a restarted sidecar that replays the stream writes the same
	// numbers again, so a reader shows each number once.
	Seq int `json:"seq"`
	// Time is when the sidecar wrote the line (RFC 3339, UTC).
	Time time.Time `json:"time"`
	// Detector names who speaks: silentRun, or a loop detector
	// (identicalCalls...) whose first trip warnFirst turned into a warning.
	Detector string `json:"detector"`
	// Message is the text meant for the agent.
	Message string `json:"message"`
	// Line is the agent output line at which the nudge was said.
	Line int `json:"line"`
	// Warning is true when the nudge replaced a loop trip: the next one
	// stops the turn.
	Warning bool `json:"warning,omitempty"`
}

// Valid says whether r is worth showing: a positive number, a detector
// name and a message of bounded size in valid UTF-8.
func (r Record) Valid() bool {
	return r.Seq > 0 && r.Detector != "" && len(r.Detector) <= 64 && r.Message != "" &&
		len(r.Message) <= MaxMessage && utf8.ValidString(r.Message) && utf8.ValidString(r.Detector)
}

// Encode is r as one line, newline included. An over-long message is cut
// on a rune boundary.
func Encode(r Record) []byte {
	if len(r.Message) > MaxMessage {
		cut := MaxMessage
		for cut > 0 && !utf8.RuneStart(r.Message[cut]) {
			cut--
		}
		r.Message = r.Message[:cut]
	}
	r.Time = r.Time.UTC()
	b, _ := json.Marshal(r) // a struct of strings, ints and a time: cannot fail
	return append(b, '\n')
}

// Parse reads the records of data, skipping every line that is not one
// (junk, a torn last line, a record out of bounds). It never fails.
func Parse(data []byte) []Record {
	var out []Record
	eachLine(data, func(line []byte) {
		var r Record
		if json.Unmarshal(line, &r) == nil && r.Valid() {
			out = append(out, r)
		}
	})
	return out
}

// eachLine calls f with every line of data that is not empty and not over
// MaxLine (junk to every reader of the volume's files), without its newline.
func eachLine(data []byte, f func(line []byte)) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > 0 && len(line) <= MaxLine {
			f(line)
		}
	}
}
