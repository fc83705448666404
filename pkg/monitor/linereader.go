package monitor

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine is the line cap: the longest line the engine reads whole.
// A longer line is skipped without being held in memory and counted as
// unparsed. 16 MiB holds any realistic restated partial message; the
// reader's memory is bounded by this cap plus one read buffer.
const DefaultMaxLine = 16 << 20

// LineReader splits any io.Reader into lines with a bounded buffer. Lines
// longer than the cap are skipped as they stream past: Next reports them
// with Skipped set and an empty line, so the caller counts them (as
// unparsed) and their line numbers stay right.
type LineReader struct {
	r       io.Reader
	buf     []byte
	start   int // first unread byte in buf
	end     int // end of valid data in buf
	maxLine int
	err     error
	skipped bool
	head    [64]byte // the first bytes of a skipped line (its timestamp prefix)
	headLen int
}

// NewLineReader reads lines of at most maxLine bytes (DefaultMaxLine when
// maxLine <= 0) from r.
func NewLineReader(r io.Reader, maxLine int) *LineReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	initial := 1 << 20 // large enough that compacting a partial line is rare
	if initial > maxLine+1 {
		initial = maxLine + 1
	}
	return &LineReader{r: r, buf: make([]byte, initial), maxLine: maxLine}
}

// Next returns the next line without its newline (and without a trailing
// CR). The slice is valid until the next call. ok is false at the end of
// input. For an over-long line, Next returns only its first 64 bytes (enough
// for a `kubectl logs --timestamps` prefix) and Skipped reports true until
// the following call; the rest was discarded unread.
func (l *LineReader) Next() (line []byte, ok bool) {
	l.skipped = false
	seen := 0 // bytes of the line already searched
	for {
		if i := bytes.IndexByte(l.buf[l.start+seen:l.end], '\n'); i >= 0 {
			i += seen
			line = l.buf[l.start : l.start+i]
			l.start += i + 1
			return trimCR(line), true
		}
		if l.err != nil {
			if l.start < l.end { // last line without a newline
				line = l.buf[l.start:l.end]
				l.start = l.end
				return trimCR(line), true
			}
			return nil, false
		}
		if l.end-l.start > l.maxLine {
			l.headLen = copy(l.head[:], l.buf[l.start:l.end])
			l.skipLong()
			return l.head[:l.headLen], true
		}
		seen = l.end - l.start
		l.fill()
	}
}

// Skipped reports whether the line Next just returned was over the cap and
// skipped.
func (l *LineReader) Skipped() bool { return l.skipped }

// Err returns the read error that ended the input, if it was not io.EOF.
func (l *LineReader) Err() error {
	if errors.Is(l.err, io.EOF) {
		return nil
	}
	return l.err
}

// fill reads more input, compacting and growing the buffer up to the cap.
func (l *LineReader) fill() {
	if l.start > 0 && (l.end == len(l.buf) || l.start == l.end) {
		copy(l.buf, l.buf[l.start:l.end])
		l.end -= l.start
		l.start = 0
	}
	if l.end == len(l.buf) {
		n := 2 * len(l.buf)
		if n > l.maxLine+1 {
			n = l.maxLine + 1
		}
		nb := make([]byte, n)
		copy(nb, l.buf[:l.end])
		l.buf = nb
	}
	n, err := l.read(l.buf[l.end:])
	l.end += n
	if err != nil {
		l.err = err
	}
}

// read reads at least one byte, or fails: like bufio, it gives up with
// io.ErrNoProgress after many empty reads in a row.
func (l *LineReader) read(p []byte) (int, error) {
	for range 100 {
		if n, err := l.r.Read(p); n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// skipLong drops the rest of an over-long line, reading it in buffer-sized
// pieces that are discarded, never held whole.
func (l *LineReader) skipLong() {
	l.skipped = true
	l.start, l.end = 0, 0
	for l.err == nil {
		n, err := l.read(l.buf)
		if err != nil {
			l.err = err
		}
		if i := bytes.IndexByte(l.buf[:n], '\n'); i >= 0 {
			l.start, l.end = i+1, n
			return
		}
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
