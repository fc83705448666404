package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strings"
)

// scanner is a hand-written, zero-allocation JSON reader over one line. It
// finds keys and values by scanning bytes and hands out raw (still escaped)
// string contents as sub-slices of the line; only what a detector needs is
// ever unescaped, and then without allocating (see whitespace.go, sig.go).
// Skipped values are checked leniently: strings must close and brackets must
// match, which is enough to tell a truncated line from a whole one.
type Scanner struct {
	Buf []byte
	Pos int
	Bad bool // set on the first syntax error; every later call fails
	// esc is set when a key or a string read with str (a word the
	// parsers compare) writes a printable ASCII character as a \u escape:
	// the line is then read again from a canonical copy (spelling.go).
	Esc bool
	// known are strings of b found on the same bytes before: text jumps
	// to their ends.
	Known Spans
}

// spans are where the contents of a few strings start and end (their
// closing quote), in the order they were found.
type Spans struct {
	N  int
	At [4][2]int32
}

// add records a string's contents from..end; past the fourth, or past
// what an int32 holds, none.
func (p *Spans) Add(from, end int) {
	if p.N < len(p.At) && end <= math.MaxInt32 {
		p.At[p.N] = [2]int32{int32(from), int32(end)}
		p.N++
	}
}

// span returns the k-th span.
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

// maxDepth bounds the nesting that call signatures hash structurally
// (deeper values hash by their bytes); skipping has no depth limit: a
// line must never lose its tool calls to what is nested in their
// arguments, which the model writes.
const MaxDepth = 128

func (s *Scanner) Reset(b []byte) { s.Buf, s.Pos, s.Bad, s.Esc, s.Known = b, 0, false, false, Spans{} }

func (s *Scanner) Fail() bool { s.Bad = true; return false }

// ws skips spaces. Encoders write none between tokens, so the first test
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

// peek returns the next non-space byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.SkipSpace()
	if s.Bad || s.Pos >= len(s.Buf) {
		return 0
	}
	return s.Buf[s.Pos]
}

// obj iterates the members of one object; n counts members read, and key
// is the raw key of the member next stopped at.
type Obj struct {
	N   int
	Key []byte
	// order, if set, is the order in which the format writes this
	// object's keys: the key of member n is first compared, whole, with
	// order[n] (a few word compares, no scan). A hint only: any other key
	// or spelling is read as usual.
	Order []keyWord
}

// keyWord is one key as `"name":`, in little-endian 8-byte words with the
// masks that select its bytes.
type keyWord struct {
	w, m [3]uint64
	n    int // len(`"name":`)
	name string
}

// keyOrder builds an obj.order. A name must be at most 21 bytes with no
// quote or backslash (the match then reads exactly what keySlow reads).
func KeyOrder(names ...string) []keyWord {
	order := make([]keyWord, len(names))
	for k, name := range names {
		lit := `"` + name + `":`
		if len(lit) > 24 || strings.ContainsAny(name, `"\\`) {
			panic("keyOrder: " + name)
		}
		for j := 0; j < len(lit); j++ {
			order[k].w[j/8] |= uint64(lit[j]) << (8 * (j % 8))
			order[k].m[j/8] |= 0xff << (8 * (j % 8))
		}
		order[k].n, order[k].name = len(lit), name
	}
	return order
}

// enter consumes '{'.
func (s *Scanner) Enter() bool {
	if s.Peek() != '{' {
		return s.Fail()
	}
	s.Pos++
	return true
}

// key reads the next member's key (raw) and its colon, leaving the scanner
// at the value. It returns false at the closing brace or on an error.
//
// The common spelling (no spaces, a key of up to 16 bytes without a
// backslash, as every encoder writes between members) is read here, a
// word at a time; anything else by keySlow.
func (s *Scanner) Key(o *Obj) ([]byte, bool) {
	b, i := s.Buf, s.Pos
	if s.Bad {
		return nil, false
	}
	if o.N > 0 {
		if i >= len(b) || b[i] != ',' {
			return s.keySlow(o)
		}
		i++
	}
	if i+24 <= len(b) && o.N < len(o.Order) {
		h := &o.Order[o.N]
		if binary.LittleEndian.Uint64(b[i:])&h.m[0] == h.w[0] &&
			binary.LittleEndian.Uint64(b[i+8:])&h.m[1] == h.w[1] &&
			binary.LittleEndian.Uint64(b[i+16:])&h.m[2] == h.w[2] {
			s.Pos = i + h.n
			o.N++
			return b[i+1 : i+h.n-2], true
		}
	}
	if i+18 > len(b) || b[i] != '"' {
		return s.keySlow(o)
	}
	from := i + 1
	for j := from; j < from+16; j += 8 {
		w := binary.LittleEndian.Uint64(b[j:])
		q, e := w^('"'*swarLo), w^('\\'*swarLo)
		mq, me := (q-swarLo)&^q&swarHi, (e-swarLo)&^e&swarHi
		if mq|me == 0 {
			continue
		}
		if mq != 0 && (me == 0 || mq&-mq < me&-me) { // a quote before any backslash
			k := j + bits.TrailingZeros64(mq)>>3
			if b[k+1] != ':' {
				break
			}
			s.Pos = k + 2
			o.N++
			return b[from:k], true
		}
		break
	}
	return s.keySlow(o)
}

// keySlow is key for any spelling.
func (s *Scanner) keySlow(o *Obj) ([]byte, bool) {
	c := s.Peek()
	if c == '}' {
		s.Pos++
		return nil, false
	}
	if o.N > 0 {
		if c != ',' {
			return nil, s.Fail()
		}
		s.Pos++
		c = s.Peek()
	}
	if c != '"' {
		return nil, s.Fail()
	}
	k, ok := s.Str()
	if !ok || s.Peek() != ':' {
		return nil, s.Fail()
	}
	s.Pos++
	o.N++
	return k, true
}

// next reads the next member's key into o.key, leaving the scanner at the
// value. It returns false at the closing brace or on an error.
func (s *Scanner) Next(o *Obj) bool {
	k, ok := s.Key(o)
	o.Key = k
	return ok
}

// find skips members of o up to the next one named name and leaves the
// scanner at its value. It returns false at the closing brace or on an
// error; a loop over find visits every member of that name.
func (s *Scanner) Find(o *Obj, name string) bool {
	for s.skipOrdered(o, name) {
	}
	for s.Next(o) {
		if len(o.Key) == len(name) && string(o.Key) == name {
			return true
		}
		s.Skip()
	}
	return false
}

// skipOrdered steps over the next member, key and value, if its key is
// the one o.order expects there, that key is not name, and its value is a
// number: the members a find passes over in the objects of counts that
// agents write. It returns false, having moved nothing, otherwise.
func (s *Scanner) skipOrdered(o *Obj, name string) bool {
	b, i := s.Buf, s.Pos
	if s.Bad || o.N >= len(o.Order) {
		return false
	}
	if o.N > 0 {
		if i >= len(b) || b[i] != ',' {
			return false
		}
		i++
	}
	h := &o.Order[o.N]
	if i+24 > len(b) || h.name == name ||
		binary.LittleEndian.Uint64(b[i:])&h.m[0] != h.w[0] ||
		binary.LittleEndian.Uint64(b[i+8:])&h.m[1] != h.w[1] ||
		binary.LittleEndian.Uint64(b[i+16:])&h.m[2] != h.w[2] {
		return false
	}
	end := NumberEnd(b, i+h.n)
	if end < 0 {
		return false
	}
	s.Pos = end
	o.N++
	return true
}

// into is find for a member whose value is an object: it enters that
// object, skipping members of that name with any other value (null).
func (s *Scanner) Into(o *Obj, name string) bool {
	for s.Find(o, name) {
		if s.Object() {
			return true
		}
	}
	return false
}

// object enters the value if it is an object, and otherwise skips it
// (null, or any other value) and returns false.
func (s *Scanner) Object() bool {
	if s.Peek() != '{' {
		s.Skip()
		return false
	}
	s.Pos++
	return true
}

// arr iterates the elements of one array.
type Arr struct{ N int }

// enterArray consumes '['.
func (s *Scanner) EnterArray() bool {
	if s.Peek() != '[' {
		return s.Fail()
	}
	s.Pos++
	return true
}

// elem positions the scanner at the next element; false at ']' or on error.
func (s *Scanner) Elem(a *Arr) bool {
	c := s.Peek()
	if c == ']' {
		s.Pos++
		return false
	}
	if a.N > 0 {
		if c != ',' {
			return s.Fail()
		}
		s.Pos++
		if s.Peek() == 0 {
			return s.Fail()
		}
	} else if c == 0 {
		return s.Fail()
	}
	a.N++
	return true
}

// str reads a string value that the parsers compare with known words (a
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

// text reads a string value that is free text (a delta, a message, an
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

// stringEnd finds the closing quote of a string whose contents start at
// from. It returns -1 if the string never closes.
func StringEnd(b []byte, from int) int {
	end, _ := ScanString(b, from)
	return end
}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// scanString is stringEnd that also says whether the string may hold a
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

// strOrNull reads a string, or null as an empty string.
func (s *Scanner) StrOrNull() ([]byte, bool) {
	if s.Peek() == 'n' {
		return nil, s.Literal("null")
	}
	return s.Str()
}

// textOrNull reads free text, or null as an empty string.
func (s *Scanner) TextOrNull() ([]byte, bool) {
	if s.Peek() == 'n' {
		return nil, s.Literal("null")
	}
	return s.Text()
}

// number reads a number literal, checking JSON's number grammar.
func (s *Scanner) Number() ([]byte, bool) {
	start := s.Pos
	end := NumberEnd(s.Buf, start)
	if end < 0 {
		return nil, s.Fail()
	}
	s.Pos = end
	return s.Buf[start:end], true
}

// numberEnd returns the end of the number literal at i, or -1 if JSON's
// number grammar does not hold there.
func NumberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && (b[i] == '.' || b[i]|0x20 == 'e') {
		return numberTail(b, i)
	}
	return i
}

// numberTail is numberEnd for a fraction and an exponent at i.
func numberTail(b []byte, i int) int {
	if b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the end of the run of digits at i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// integer reads a non-negative integer count: any number spelling of it
// ("1000000", "1e6", "1E+6", "1000000.0"); a fraction is cut off, null and
// negatives read as 0, and values past 2^58 saturate. A value of another
// type (a string, an object) reads as 0 with ok false, and the line still
// counts: a count is never a reason to drop a line's tool calls.
func (s *Scanner) Integer() (int64, bool) {
	switch c := s.Peek(); {
	case c == 'n':
		return 0, s.Literal("null")
	case c != '-' && (c < '0' || c > '9'):
		s.Skip()
		return 0, false
	}
	lit, ok := s.Number()
	if !ok {
		return 0, false
	}
	if lit[0] == '-' {
		return 0, true
	}
	var v int64
	for i, c := range lit {
		if c < '0' || c > '9' {
			return scaledInteger(lit, i), true // rare: a fraction or an exponent
		}
		if v < 1<<58 {
			v = v*10 + int64(c-'0')
		}
	}
	return min(v, 1<<58), true
}

// scaledInteger is the integer part of a valid, non-negative JSON number
// literal whose integer digits end at lit[intEnd] ('.', 'e' or 'E').
func scaledInteger(lit []byte, intEnd int) int64 {
	mant, frac := lit[:intEnd], lit[intEnd:intEnd]
	rest := lit[intEnd:]
	if rest[0] == '.' {
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		frac, rest = rest[1:j], rest[j:]
	}
	exp := 0
	if len(rest) > 0 { // e or E, a sign, digits
		neg := rest[1] == '-'
		j := 1
		if rest[1] == '-' || rest[1] == '+' {
			j = 2
		}
		for ; j < len(rest); j++ {
			if exp < 1000 {
				exp = exp*10 + int(rest[j]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	// The value is the digits mant+frac with the point after
	// len(mant)+exp of them; its integer part is those leading digits.
	point := len(mant) + exp
	var v int64
	for k := 0; k < point; k++ {
		d := byte('0')
		switch {
		case k < len(mant):
			d = mant[k]
		case k-len(mant) < len(frac):
			d = frac[k-len(mant)]
		}
		v = v*10 + int64(d-'0')
		if v >= 1<<58 {
			return 1 << 58
		}
	}
	return v
}

// boolean reads true or false (null reads as false).
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

// value skips one value and returns its raw bytes.
func (s *Scanner) Value() ([]byte, bool) {
	s.SkipSpace()
	start := s.Pos
	if !s.Skip() {
		return nil, false
	}
	return s.Buf[start:s.Pos], true
}

// skip steps over one value of any kind without recursion, checking the
// grammar as it goes. Strings are jumped with IndexByte (their escapes are
// not validated); brackets are matched on a bit stack, two words on the
// goroutine stack and grown on the heap past 128 levels (a bit per level,
// bounded by the line).
func (s *Scanner) Skip() bool {
	switch c := s.Peek(); { // most values skipped are strings and numbers
	case c == '"':
		end := StringEnd(s.Buf, s.Pos+1)
		if end < 0 {
			return s.Fail()
		}
		s.Pos = end + 1
		return true
	case c == '-' || c-'0' < 10:
		end := NumberEnd(s.Buf, s.Pos)
		if end < 0 {
			return s.Fail()
		}
		s.Pos = end
		return true
	}
	return s.skipNested()
}

// skipNested is skip for any value, containers included: one loop over
// local state (no call but for strings and numbers), for up to 64 levels
// of nesting; deeper values go to skipDeep from the start.
func (s *Scanner) skipNested() bool {
	b, i := s.Buf, s.Pos
	start := i
	var objs uint64 // bit d set: level d is an object
	depth := 0
	var top uint64 // the bit of the innermost open level, 1<<(depth-1)
	var c byte
value: // a value must follow
	if i >= len(b) || b[i] <= ' ' {
		if i = skipWS(b, i); i >= len(b) {
			return s.Fail()
		}
	}
	switch c = b[i]; {
	case c == '"':
		end, _ := ScanString(b, i+1)
		if end < 0 {
			return s.Fail()
		}
		i = end + 1
	case c == '{' || c == '[':
		if depth == 64 {
			s.Pos = start
			return s.skipDeep()
		}
		i = skipWS(b, i+1)
		top = 1 << depth
		if c == '{' {
			objs |= top
		} else {
			objs &^= top
		}
		depth++
		if i < len(b) && b[i] == c+2 { // '}' or ']': empty
			i++
			depth--
			top >>= 1
			break
		}
		if c == '{' {
			goto key
		}
		goto value
	case c == 't':
		if len(b)-i < 4 || string(b[i:i+4]) != "true" {
			return s.Fail()
		}
		i += 4
	case c == 'f':
		if len(b)-i < 5 || string(b[i:i+5]) != "false" {
			return s.Fail()
		}
		i += 5
	case c == 'n':
		if len(b)-i < 4 || string(b[i:i+4]) != "null" {
			return s.Fail()
		}
		i += 4
	default:
		if i = NumberEnd(b, i); i < 0 {
			return s.Fail()
		}
	}
after: // a value ended
	if depth == 0 {
		s.Pos = i
		return true
	}
	if i >= len(b) || b[i] <= ' ' {
		if i = skipWS(b, i); i >= len(b) {
			return s.Fail()
		}
	}
	c = b[i]
	i++
	if obj := objs&top != 0; c == ',' {
		if obj {
			goto key
		}
		goto value
	} else if obj && c == '}' || !obj && c == ']' {
		depth--
		top >>= 1
		goto after
	}
	return s.Fail()
key: // a key, its colon, then a value
	if i < len(b) && b[i] <= ' ' {
		i = skipWS(b, i)
	}
	if i >= len(b) || b[i] != '"' {
		return s.Fail()
	}
	if end, _ := ScanString(b, i+1); end < 0 {
		return s.Fail()
	} else {
		i = end + 1
	}
	if i < len(b) && b[i] == ':' {
		i++
	} else if i = skipWS(b, i); i < len(b) && b[i] == ':' {
		i++
	} else {
		return s.Fail()
	}
	goto value
}

// skipWS returns the end of the spaces at i.
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipDeep is skipNested for any depth: its bracket stack is a bit per
// level, two words on the goroutine stack and grown on the heap past 128.
func (s *Scanner) skipDeep() bool {
	const (
		sValue        = iota // a value must follow
		sValueOrClose        // just after '[': a value or ']'
		sKeyOrClose          // just after '{': a key or '}'
		sKey                 // after ',' in an object
		sColon               // after a key
		sNext                // after a value inside a container: ',' or the close
	)
	var stackBuf [2]uint64 // bit set: object; clear: array
	stack := stackBuf[:]
	depth, state := 0, sValue
	for {
		c := s.Peek()
		switch state {
		case sKeyOrClose, sKey:
			if c == '}' && state == sKeyOrClose {
				break // close below
			}
			if c != '"' {
				return s.Fail()
			}
			if end := StringEnd(s.Buf, s.Pos+1); end < 0 {
				return s.Fail()
			} else {
				s.Pos = end + 1
			}
			state = sColon
			continue
		case sColon:
			if c != ':' {
				return s.Fail()
			}
			s.Pos++
			state = sValue
			continue
		case sNext:
			if c == ',' {
				s.Pos++
				if stack[(depth-1)/64]&(1<<((depth-1)%64)) != 0 {
					state = sKey
				} else {
					state = sValue
				}
				continue
			}
			if c != '}' && c != ']' {
				return s.Fail()
			}
		case sValueOrClose:
			if c == ']' {
				break
			}
			fallthrough
		case sValue:
			switch {
			case c == '"':
				end := StringEnd(s.Buf, s.Pos+1)
				if end < 0 {
					return s.Fail()
				}
				s.Pos = end + 1
			case c == '{' || c == '[':
				if depth == len(stack)*64 {
					stack = append(stack, 0)
				}
				w, bit := depth/64, uint64(1)<<(depth%64)
				if c == '{' {
					stack[w] |= bit
					state = sKeyOrClose
				} else {
					stack[w] &^= bit
					state = sValueOrClose
				}
				depth++
				s.Pos++
				continue
			case c == 't':
				if !s.Literal("true") {
					return false
				}
			case c == 'f':
				if !s.Literal("false") {
					return false
				}
			case c == 'n':
				if !s.Literal("null") {
					return false
				}
			case c == '-' || c >= '0' && c <= '9':
				if _, ok := s.Number(); !ok {
					return false
				}
			default:
				return s.Fail()
			}
			if depth == 0 {
				return true
			}
			state = sNext
			continue
		}
		// c closes the innermost container.
		if depth == 0 {
			return s.Fail()
		}
		depth--
		isObj := stack[depth/64]&(uint64(1)<<(depth%64)) != 0
		if isObj != (c == '}') {
			return s.Fail()
		}
		s.Pos++
		if depth == 0 {
			return true
		}
		state = sNext
	}
}

// restated steps over the value ahead if its bytes are exactly v, a whole
// value this line already read and checked: a value's extent follows from
// its bytes, so the same bytes are the same valid value, and checking them
// again would only repeat the work. It returns false, having moved
// nothing, when they differ (or v is empty).
func (s *Scanner) Restated(v []byte) bool {
	if s.Peek() == 0 || len(v) == 0 || !bytes.HasPrefix(s.Buf[s.Pos:], v) {
		return false
	}
	s.Pos += len(v)
	return true
}

// hasLit reports whether b holds lit at i.
func HasLit(b []byte, i int, lit string) bool {
	return i >= 0 && len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// rewind moves the scanner back to i and returns false: a fast path that
// read ahead gives the line back to the general one.
func (s *Scanner) Rewind(i int) bool {
	s.Pos = i
	return false
}

// end checks that nothing but spaces follows the top-level value.
func (s *Scanner) End() bool {
	s.SkipSpace()
	if s.Bad || s.Pos != len(s.Buf) {
		return s.Fail()
	}
	return true
}

// skipRest skips the remaining members of an object after key() stopped
// being interesting, and its closing brace.
func (s *Scanner) SkipRest(o *Obj) bool {
	for {
		if _, ok := s.Key(o); !ok {
			return !s.Bad
		}
		if !s.Skip() {
			return false
		}
	}
}
