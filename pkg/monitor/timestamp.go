package monitor

import (
	"bytes"
	"time"
	"unsafe"
)

// splitTimestamp splits off a `kubectl logs --timestamps` prefix.
func splitTimestamp(line []byte) (time.Time, []byte) {
	if len(line) < 21 || line[0] < '0' || line[0] > '9' || line[4] != '-' {
		return time.Time{}, line
	}
	head := line
	if len(head) > 40 {
		head = head[:40]
	}
	sp := bytes.IndexByte(head, ' ')
	if sp < 20 {
		return time.Time{}, line
	}
	t, err := time.Parse(time.RFC3339Nano, unsafe.String(&line[0], sp))
	if err != nil {
		return time.Time{}, line
	}
	return t, line[sp+1:]
}
