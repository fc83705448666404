package nudgefile

import (
	"encoding/json"
	"time"
)

// AckFile is where turnwatch-hook acknowledges what it delivered, in Dir:
// one JSON line per nudge it handed to the CLI, and one line with seq 0 the
// first time it ran at all. The sidecar reads it to tell "delivered" from
// "not delivered" on the nudge's Pod condition and Event, and to warn once
// when no hook ran in a turn. The agent can write it too: an ack is never a
// verdict, and a forged one can at most mislabel a nudge's delivery.
const AckFile = "acks.jsonl"

// MaxAcks bounds what the sidecar reads of AckFile: an honest file holds a
// line per nudge and one hello, a few KiB at most.
const MaxAcks = 1 << 20

// Ack is one line of AckFile.
type Ack struct {
	// Seq is the number of the nudge delivered (Record.Seq); 0 says only
	// that the hook ran.
	Seq int `json:"seq"`
	// Time is when the hook wrote the line.
	Time time.Time `json:"time"`
	// CLI and Event name the hook protocol and the CLI's event it answered
	// (claude PostToolUse, opencode tool.execute.after...).
	CLI   string `json:"cli,omitempty"`
	Event string `json:"event,omitempty"`
	// Refused names a call the hook refused before it ran (its id, or "?"
	// when the CLI passes none); Seq is 0 on such a line.
	Refused string `json:"refused,omitempty"`
}

// EncodeAck is a as one line, newline included.
func EncodeAck(a Ack) []byte {
	a.Time = a.Time.UTC()
	b, _ := json.Marshal(a) // ints, strings and a time: cannot fail
	return append(b, '\n')
}

// Acks is what AckFile says: whether a hook ran, which nudges it
// delivered, and which calls it refused.
type Acks struct {
	Ran bool
	// Refused are the ids of the calls the hook refused, in the file's
	// order ("?" for a call the CLI passed no id of).
	Refused   []string
	delivered map[int]bool
}

// Delivered says whether the nudge numbered seq was acknowledged.
func (a Acks) Delivered(seq int) bool { return a.delivered[seq] }

// ParseAcks reads AckFile's lines, skipping what is not an ack. It never
// fails.
func ParseAcks(data []byte) Acks {
	var a Acks
	eachLine(data, func(line []byte) {
		var rec Ack
		if json.Unmarshal(line, &rec) != nil || rec.Seq < 0 {
			return
		}
		a.Ran = true
		if rec.Refused != "" {
			a.Refused = append(a.Refused, rec.Refused)
		}
		if rec.Seq > 0 {
			if a.delivered == nil {
				a.delivered = map[int]bool{}
			}
			a.delivered[rec.Seq] = true
		}
	})
	return a
}
