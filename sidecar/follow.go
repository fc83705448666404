package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// cutKeep is how much of a cut line is kept: its timestamp prefix.
const cutKeep = 64

// newLine copies a line read by a lineReader for delivery.
func newLine(data []byte, t time.Time, cut bool) streamLine {
	if cut {
		data = data[:min(len(data), cutKeep)]
	}
	return streamLine{Data: append([]byte(nil), data...), Time: t, Cut: cut}
}

// streamLine is one line of the agent's output as the sidecar read it.
type streamLine struct {
	// Data is the line without its newline; for the pods/log source it keeps
	// the `--timestamps` prefix, so the engine's clock comes from it.
	Data []byte
	// Time is the line's log timestamp; zero for the file source.
	Time time.Time
	// Cut is true when the line was longer than the bound: Data then holds
	// only its start (enough for the timestamp), and the line counts as
	// unparsed.
	Cut bool
	// Cursor is the log position after this line (pods/log source only):
	// a checkpoint taken after the line resumes from it.
	Cursor logCursor
}

// source delivers the agent's output, line by line, until the output is over:
// Follow returns nil once the agent container terminated and every line it
// wrote was delivered, or ctx's error. Connected reports whether the source is
// live right now (a dropped stream is not), so that silence is judged only on
// a live source.
type source interface {
	Follow(ctx context.Context, emit func(streamLine) error) error
	Connected() bool
}

// lineReader reads bounded lines: at most max bytes of a line are kept, the
// rest of it is read and dropped, so a line of many megabytes costs max bytes.
// A line that has no newline yet stays pending across calls, so a reader on a
// growing file picks it up where it stopped.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte
	cut  bool
	read int64 // bytes consumed from r, newlines included
}

// errPartialLine says the input ended, for now, inside a line; the part read
// so far stays pending (see flush).
var errPartialLine = errors.New("the input ended inside a line")

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = monitor.DefaultMaxLine
	}
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next complete line (without its newline) and whether it
// was cut. At the end of the input it returns io.EOF, or errPartialLine when
// a line without newline is pending; other errors are the reader's.
func (l *lineReader) next() ([]byte, bool, error) {
	for {
		chunk, err := l.br.ReadSlice('\n')
		l.read += int64(len(chunk))
		l.keep(chunk)
		switch {
		case err == nil:
			line, cut := bytes.TrimSuffix(l.buf, []byte{'\r'}), l.cut
			l.buf, l.cut = l.buf[:0], false
			return line, cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(l.buf) == 0 && !l.cut:
			return nil, false, io.EOF
		case errors.Is(err, io.EOF):
			return nil, false, errPartialLine
		default:
			return nil, false, err
		}
	}
}

// keep appends chunk to the pending line, up to the bound.
func (l *lineReader) keep(chunk []byte) {
	chunk = bytes.TrimSuffix(chunk, []byte{'\n'})
	room := l.max - len(l.buf)
	if len(chunk) > room {
		chunk, l.cut = chunk[:max(room, 0)], true
	}
	l.buf = append(l.buf, chunk...)
}

// flush returns the pending line without newline, if any: the last line of
// an input that is over.
func (l *lineReader) flush() ([]byte, bool, bool) {
	if len(l.buf) == 0 && !l.cut {
		return nil, false, false
	}
	line, cut := l.buf, l.cut
	l.buf, l.cut = l.buf[:0], false
	return line, cut, true
}

// parseLogTime reads the RFC 3339 timestamp that `kubectl logs --timestamps`
// (the kubelet) puts before each line, and returns it with the rest.
func parseLogTime(line []byte) (time.Time, bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || sp > 40 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(line[:sp]))
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
