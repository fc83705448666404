// Package jsonscan is pkg/monitor's JSON reader: a hand-written,
// zero-allocation scanner over one line of an agent's event stream, below
// the stream formats as encoding/json/internal/jsonwire is below jsontext.
// It knows JSON, not agents: the formats (pkg/monitor's format_*.go) walk a
// line with it and decide what the line means.
//
// The files are split by job: scanner.go holds the Scanner and its
// position; keys.go objects and arrays (members, keys, elements);
// strings.go string values; numbers.go number values; skip.go whole values
// stepped over; spelling.go the \u escapes of ASCII characters that a line
// may spell its words with.
package jsonscan

import (
	"math"
)

// Scanner is a hand-written, zero-allocation JSON reader over one line. It
// finds keys and values by scanning bytes and hands out raw (still escaped)
// string contents as sub-slices of the line; only what a detector needs is
// ever unescaped, and then without allocating (see pkg/monitor's
// whitespace.go, sig.go). Skipped values are checked leniently: strings
// must close and brackets must match, which is enough to tell a truncated
// line from a whole one.
//
// Its fields are exported for the formats' fast paths, which match the
// spelling an agent writes in place (HasLit) and move Pos past it.
type Scanner struct {
	Buf []byte // the line
	Pos int    // the next byte to read in Buf
	Bad bool   // set on the first syntax error; every later call fails
	// Esc is set when a key or a string read with Str (a word the
	// parsers compare) writes a printable ASCII character as a \u escape:
	// the line is then read again from a canonical copy (Canonicalize).
	Esc bool
	// Known are strings of Buf found on the same bytes before: Text jumps
	// to their ends.
	Known Spans
}

// Spans are where the contents of a few strings start and end (their
// closing quote), in the order they were found.
type Spans struct {
	N  int
	At [4][2]int32
}

// Add records a string's contents from..end; past the fourth, or past
// what an int32 holds, none.
func (p *Spans) Add(from, end int) {
	if p.N < len(p.At) && end <= math.MaxInt32 {
		p.At[p.N] = [2]int32{int32(from), int32(end)}
		p.N++
	}
}

// Span returns the k-th span.
func (p *Spans) Span(k int) (from, end int) { return int(p.At[k][0]), int(p.At[k][1]) }

// end returns the end of the string whose contents start at from, or -1.
func (p *Spans) end(from int) int {
	for k := 0; k < p.N; k++ {
		if int(p.At[k][0]) == from {
			return int(p.At[k][1])
		}
	}
	return -1
}

// MaxDepth bounds the nesting that call signatures hash structurally
// (deeper values hash by their bytes); skipping has no depth limit: a
// line must never lose its tool calls to what is nested in their
// arguments, which the model writes.
const MaxDepth = 128

func (s *Scanner) Reset(b []byte) { s.Buf, s.Pos, s.Bad, s.Esc, s.Known = b, 0, false, false, Spans{} }

func (s *Scanner) Fail() bool { s.Bad = true; return false }

// SkipSpace skips spaces. Encoders write none between tokens, so the first test
// (a byte above the space) settles almost every call, inlined.
func (s *Scanner) SkipSpace() {
	if s.Pos < len(s.Buf) && s.Buf[s.Pos] > ' ' {
		return
	}
	s.wsSlow()
}

func (s *Scanner) wsSlow() {
	for s.Pos < len(s.Buf) {
		switch s.Buf[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// Peek returns the next non-space byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.SkipSpace()
	if s.Bad || s.Pos >= len(s.Buf) {
		return 0
	}
	return s.Buf[s.Pos]
}

// KeyWord is one key as `"name":`, in little-endian 8-byte words with the
// masks that select its bytes.
type KeyWord struct {
	w, m [3]uint64
	n    int // len(`"name":`)
	name string
}

// Boolean reads true or false (null reads as false).
func (s *Scanner) Boolean() (bool, bool) {
	switch s.Peek() {
	case 't':
		return true, s.Literal("true")
	case 'f':
		return false, s.Literal("false")
	case 'n':
		return false, s.Literal("null")
	}
	return false, s.Fail()
}

func (s *Scanner) Literal(lit string) bool {
	if len(s.Buf)-s.Pos < len(lit) || string(s.Buf[s.Pos:s.Pos+len(lit)]) != lit {
		return s.Fail()
	}
	s.Pos += len(lit)
	return true
}

// HasLit reports whether b holds lit at i.
func HasLit(b []byte, i int, lit string) bool {
	return i >= 0 && len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// Rewind moves the scanner back to i and returns false: a fast path that
// read ahead gives the line back to the general one.
func (s *Scanner) Rewind(i int) bool {
	s.Pos = i
	return false
}

// End checks that nothing but spaces follows the top-level value.
func (s *Scanner) End() bool {
	s.SkipSpace()
	if s.Bad || s.Pos != len(s.Buf) {
		return s.Fail()
	}
	return true
}
