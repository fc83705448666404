package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Str reads a string value that the parsers compare with known words (a
// type, a stop reason, a name, an id) and returns its raw contents
// (escapes intact), noting in esc an ASCII character written as an escape.
func (s *Scanner) Str() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, s.Fail()
	}
	start := s.Pos + 1
	end, bs := ScanString(s.Buf, start)
	if end < 0 {
		return nil, s.Fail()
	}
	s.Pos = end + 1
	raw := s.Buf[start:end]
	if bs && !s.Esc && hasBackslash(raw) && NeedsCanon(raw) {
		s.Esc = true
	}
	return raw, true
}

// hasBackslash: a loop for the short keys and words (no call), IndexByte
// for longer ones.
func hasBackslash(b []byte) bool {
	if len(b) > 16 {
		return bytes.IndexByte(b, '\\') >= 0
	}
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// Text reads a string value that is free text (a delta, a message, an
// error): its raw contents, escapes intact and not examined.
func (s *Scanner) Text() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, s.Fail()
	}
	start := s.Pos + 1
	end := -1
	if s.Known.N > 0 {
		end = s.Known.end(start)
	}
	if end < 0 {
		end = StringEnd(s.Buf, start)
	}
	if end < 0 {
		return nil, s.Fail()
	}
	s.Pos = end + 1
	return s.Buf[start:end], true
}

// StringEnd finds the closing quote of a string whose contents start at
// from. It returns -1 if the string never closes.
func StringEnd(b []byte, from int) int {
	end, _ := ScanString(b, from)
	return end
}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// ScanString is stringEnd that also says whether the string may hold a
// backslash (false: it holds none). Most strings are short (keys, words,
// numbers' neighbours): those it reads a word (8 bytes) at a time, looking
// for a quote or a backslash in each without a call, and steps over each
// escape pair it meets. A string still open after a few words is long
// text: the rest goes to stringEndLong (IndexByte, vectorized), and the
// backslash answer is then "maybe".
func ScanString(b []byte, from int) (int, bool) {
	j, bs := from, false
	for n := 0; n < 4 && j+8 <= len(b); n++ {
		w := binary.LittleEndian.Uint64(b[j:])
		q, e := w^('"'*swarLo), w^('\\'*swarLo)
		// A byte of q or e is zero where w holds a quote or a backslash;
		// (x - lo) &^ x & hi marks the lowest such byte exactly.
		m := ((q-swarLo)&^q | (e-swarLo)&^e) & swarHi
		if m == 0 {
			j += 8
			continue
		}
		k := j + bits.TrailingZeros64(m)>>3
		if b[k] == '"' {
			return k, bs
		}
		bs, j = true, k+2 // a backslash and the byte it escapes
	}
	if len(b)-j >= 8 {
		return stringEndLong(b, from, j), true
	}
	for ; j < len(b); j++ { // the last few bytes of the line
		switch b[j] {
		case '"':
			return j, bs
		case '\\':
			bs = true
			j++
		}
	}
	return -1, bs
}

// stringEndLong finds the closing quote from j on in a string whose
// contents start at from (j not inside an escape pair), jumping between
// quotes with IndexByte (vectorized) and counting the backslashes before
// each one.
func stringEndLong(b []byte, from, j int) int {
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p >= from && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// StrOrNull reads a string, or null as an empty string.
func (s *Scanner) StrOrNull() ([]byte, bool) {
	if s.Peek() == 'n' {
		return nil, s.Literal("null")
	}
	return s.Str()
}

// TextOrNull reads free text, or null as an empty string.
func (s *Scanner) TextOrNull() ([]byte, bool) {
	if s.Peek() == 'n' {
		return nil, s.Literal("null")
	}
	return s.Text()
}
