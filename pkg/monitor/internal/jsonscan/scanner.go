package monitor

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
type scanner struct {
	b   []byte
	i   int
	bad bool // set on the first syntax error; every later call fails
	// esc is set when a key or a string read with str (a word the
	// parsers compare) writes a printable ASCII character as a \u escape:
	// the line is then read again from a canonical copy (spelling.go).
	esc bool
	// known are strings of b found on the same bytes before: text jumps
	// to their ends.
	known spans
}

// spans are where the contents of a few strings start and end (their
// closing quote), in the order they were found.
type spans struct {
	n  int
	at [4][2]int32
}

// add records a string's contents from..end; past the fourth, or past
// what an int32 holds, none.
func (p *spans) add(from, end int) {
	if p.n < len(p.at) && end <= math.MaxInt32 {
		p.at[p.n] = [2]int32{int32(from), int32(end)}
		p.n++
	}
}

// span returns the k-th span.
func (p *spans) span(k int) (from, end int) { return int(p.at[k][0]), int(p.at[k][1]) }

// end returns the end of the string whose contents start at from, or -1.
func (p *spans) end(from int) int {
	for k := 0; k < p.n; k++ {
		if int(p.at[k][0]) == from {
			return int(p.at[k][1])
		}
	}
	return -1
}

// maxDepth bounds the nesting that call signatures hash structurally
// (deeper values hash by their bytes); skipping has no depth limit: a
// line must never lose its tool calls to what is nested in their
// arguments, which the model writes.
const maxDepth = 128

func (s *scanner) reset(b []byte) { s.b, s.i, s.bad, s.esc, s.known = b, 0, false, false, spans{} }

func (s *scanner) fail() bool { s.bad = true; return false }

// ws skips spaces. Encoders write none between tokens, so the first test
// (a byte above the space) settles almost every call, inlined.
func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsSlow()
}

func (s *scanner) wsSlow() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.bad || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// obj iterates the members of one object; n counts members read, and key
// is the raw key of the member next stopped at.
type obj struct {
	n   int
	key []byte
	// order, if set, is the order in which the format writes this
	// object's keys: the key of member n is first compared, whole, with
	// order[n] (a few word compares, no scan). A hint only: any other key
	// or spelling is read as usual.
	order []keyWord
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
func keyOrder(names ...string) []keyWord {
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
func (s *scanner) enter() bool {
	if s.peek() != '{' {
		return s.fail()
	}
	s.i++
	return true
}

// key reads the next member's key (raw) and its colon, leaving the scanner
// at the value. It returns false at the closing brace or on an error.
//
// The common spelling (no spaces, a key of up to 16 bytes without a
// backslash, as every encoder writes between members) is read here, a
// word at a time; anything else by keySlow.
func (s *scanner) key(o *obj) ([]byte, bool) {
	b, i := s.b, s.i
	if s.bad {
		return nil, false
	}
	if o.n > 0 {
		if i >= len(b) || b[i] != ',' {
			return s.keySlow(o)
		}
		i++
	}
	if i+24 <= len(b) && o.n < len(o.order) {
		h := &o.order[o.n]
		if binary.LittleEndian.Uint64(b[i:])&h.m[0] == h.w[0] &&
			binary.LittleEndian.Uint64(b[i+8:])&h.m[1] == h.w[1] &&
			binary.LittleEndian.Uint64(b[i+16:])&h.m[2] == h.w[2] {
			s.i = i + h.n
			o.n++
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
			s.i = k + 2
			o.n++
			return b[from:k], true
		}
		break
	}
	return s.keySlow(o)
}

// keySlow is key for any spelling.
func (s *scanner) keySlow(o *obj) ([]byte, bool) {
	c := s.peek()
	if c == '}' {
		s.i++
		return nil, false
	}
	if o.n > 0 {
		if c != ',' {
			return nil, s.fail()
		}
		s.i++
		c = s.peek()
	}
	if c != '"' {
		return nil, s.fail()
	}
	k, ok := s.str()
	if !ok || s.peek() != ':' {
		return nil, s.fail()
	}
	s.i++
	o.n++
	return k, true
}

// next reads the next member's key into o.key, leaving the scanner at the
// value. It returns false at the closing brace or on an error.
func (s *scanner) next(o *obj) bool {
	k, ok := s.key(o)
	o.key = k
	return ok
}

// find skips members of o up to the next one named name and leaves the
// scanner at its value. It returns false at the closing brace or on an
// error; a loop over find visits every member of that name.
func (s *scanner) find(o *obj, name string) bool {
	for s.skipOrdered(o, name) {
	}
	for s.next(o) {
		if len(o.key) == len(name) && string(o.key) == name {
			return true
		}
		s.skip()
	}
	return false
}

// skipOrdered steps over the next member, key and value, if its key is
// the one o.order expects there, that key is not name, and its value is a
// number: the members a find passes over in the objects of counts that
// agents write. It returns false, having moved nothing, otherwise.
func (s *scanner) skipOrdered(o *obj, name string) bool {
	b, i := s.b, s.i
	if s.bad || o.n >= len(o.order) {
		return false
	}
	if o.n > 0 {
		if i >= len(b) || b[i] != ',' {
			return false
		}
		i++
	}
	h := &o.order[o.n]
	if i+24 > len(b) || h.name == name ||
		binary.LittleEndian.Uint64(b[i:])&h.m[0] != h.w[0] ||
		binary.LittleEndian.Uint64(b[i+8:])&h.m[1] != h.w[1] ||
		binary.LittleEndian.Uint64(b[i+16:])&h.m[2] != h.w[2] {
		return false
	}
	end := numberEnd(b, i+h.n)
	if end < 0 {
		return false
	}
	s.i = end
	o.n++
	return true
}

// into is find for a member whose value is an object: it enters that
// object, skipping members of that name with any other value (null).
func (s *scanner) into(o *obj, name string) bool {
	for s.find(o, name) {
		if s.object() {
			return true
		}
	}
	return false
}

// object enters the value if it is an object, and otherwise skips it
// (null, or any other value) and returns false.
func (s *scanner) object() bool {
	if s.peek() != '{' {
		s.skip()
		return false
	}
	s.i++
	return true
}

// arr iterates the elements of one array.
type arr struct{ n int }

// enterArray consumes '['.
func (s *scanner) enterArray() bool {
	if s.peek() != '[' {
		return s.fail()
	}
	s.i++
	return true
}

// elem positions the scanner at the next element; false at ']' or on error.
func (s *scanner) elem(a *arr) bool {
	c := s.peek()
	if c == ']' {
		s.i++
		return false
	}
	if a.n > 0 {
		if c != ',' {
			return s.fail()
		}
		s.i++
		if s.peek() == 0 {
			return s.fail()
		}
	} else if c == 0 {
		return s.fail()
	}
	a.n++
	return true
}

// str reads a string value that the parsers compare with known words (a
// type, a stop reason, a name, an id) and returns its raw contents
// (escapes intact), noting in esc an ASCII character written as an escape.
func (s *scanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, s.fail()
	}
	start := s.i + 1
	end, bs := scanString(s.b, start)
	if end < 0 {
		return nil, s.fail()
	}
	s.i = end + 1
	raw := s.b[start:end]
	if bs && !s.esc && hasBackslash(raw) && needsCanon(raw) {
		s.esc = true
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
func (s *scanner) text() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, s.fail()
	}
	start := s.i + 1
	end := -1
	if s.known.n > 0 {
		end = s.known.end(start)
	}
	if end < 0 {
		end = stringEnd(s.b, start)
	}
	if end < 0 {
		return nil, s.fail()
	}
	s.i = end + 1
	return s.b[start:end], true
}

// stringEnd finds the closing quote of a string whose contents start at
// from. It returns -1 if the string never closes.
func stringEnd(b []byte, from int) int {
	end, _ := scanString(b, from)
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
func scanString(b []byte, from int) (int, bool) {
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
func (s *scanner) strOrNull() ([]byte, bool) {
	if s.peek() == 'n' {
		return nil, s.literal("null")
	}
	return s.str()
}

// textOrNull reads free text, or null as an empty string.
func (s *scanner) textOrNull() ([]byte, bool) {
	if s.peek() == 'n' {
		return nil, s.literal("null")
	}
	return s.text()
}

// number reads a number literal, checking JSON's number grammar.
func (s *scanner) number() ([]byte, bool) {
	start := s.i
	end := numberEnd(s.b, start)
	if end < 0 {
		return nil, s.fail()
	}
	s.i = end
	return s.b[start:end], true
}

// numberEnd returns the end of the number literal at i, or -1 if JSON's
// number grammar does not hold there.
func numberEnd(b []byte, i int) int {
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
func (s *scanner) integer() (int64, bool) {
	switch c := s.peek(); {
	case c == 'n':
		return 0, s.literal("null")
	case c != '-' && (c < '0' || c > '9'):
		s.skip()
		return 0, false
	}
	lit, ok := s.number()
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
func (s *scanner) boolean() (bool, bool) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return false, s.literal("null")
	}
	return false, s.fail()
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail()
	}
	s.i += len(lit)
	return true
}

// value skips one value and returns its raw bytes.
func (s *scanner) value() ([]byte, bool) {
	s.ws()
	start := s.i
	if !s.skip() {
		return nil, false
	}
	return s.b[start:s.i], true
}

// skip steps over one value of any kind without recursion, checking the
// grammar as it goes. Strings are jumped with IndexByte (their escapes are
// not validated); brackets are matched on a bit stack, two words on the
// goroutine stack and grown on the heap past 128 levels (a bit per level,
// bounded by the line).
func (s *scanner) skip() bool {
	switch c := s.peek(); { // most values skipped are strings and numbers
	case c == '"':
		end := stringEnd(s.b, s.i+1)
		if end < 0 {
			return s.fail()
		}
		s.i = end + 1
		return true
	case c == '-' || c-'0' < 10:
		end := numberEnd(s.b, s.i)
		if end < 0 {
			return s.fail()
		}
		s.i = end
		return true
	}
	return s.skipNested()
}

// skipNested is skip for any value, containers included: one loop over
// local state (no call but for strings and numbers), for up to 64 levels
// of nesting; deeper values go to skipDeep from the start.
func (s *scanner) skipNested() bool {
	b, i := s.b, s.i
	start := i
	var objs uint64 // bit d set: level d is an object
	depth := 0
	var top uint64 // the bit of the innermost open level, 1<<(depth-1)
	var c byte
value: // a value must follow
	if i >= len(b) || b[i] <= ' ' {
		if i = skipWS(b, i); i >= len(b) {
			return s.fail()
		}
	}
	switch c = b[i]; {
	case c == '"':
		end, _ := scanString(b, i+1)
		if end < 0 {
			return s.fail()
		}
		i = end + 1
	case c == '{' || c == '[':
		if depth == 64 {
			s.i = start
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
			return s.fail()
		}
		i += 4
	case c == 'f':
		if len(b)-i < 5 || string(b[i:i+5]) != "false" {
			return s.fail()
		}
		i += 5
	case c == 'n':
		if len(b)-i < 4 || string(b[i:i+4]) != "null" {
			return s.fail()
		}
		i += 4
	default:
		if i = numberEnd(b, i); i < 0 {
			return s.fail()
		}
	}
after: // a value ended
	if depth == 0 {
		s.i = i
		return true
	}
	if i >= len(b) || b[i] <= ' ' {
		if i = skipWS(b, i); i >= len(b) {
			return s.fail()
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
	return s.fail()
key: // a key, its colon, then a value
	if i < len(b) && b[i] <= ' ' {
		i = skipWS(b, i)
	}
	if i >= len(b) || b[i] != '"' {
		return s.fail()
	}
	if end, _ := scanString(b, i+1); end < 0 {
		return s.fail()
	} else {
		i = end + 1
	}
	if i < len(b) && b[i] == ':' {
		i++
	} else if i = skipWS(b, i); i < len(b) && b[i] == ':' {
		i++
	} else {
		return s.fail()
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
func (s *scanner) skipDeep() bool {
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
		c := s.peek()
		switch state {
		case sKeyOrClose, sKey:
			if c == '}' && state == sKeyOrClose {
				break // close below
			}
			if c != '"' {
				return s.fail()
			}
			if end := stringEnd(s.b, s.i+1); end < 0 {
				return s.fail()
			} else {
				s.i = end + 1
			}
			state = sColon
			continue
		case sColon:
			if c != ':' {
				return s.fail()
			}
			s.i++
			state = sValue
			continue
		case sNext:
			if c == ',' {
				s.i++
				if stack[(depth-1)/64]&(1<<((depth-1)%64)) != 0 {
					state = sKey
				} else {
					state = sValue
				}
				continue
			}
			if c != '}' && c != ']' {
				return s.fail()
			}
		case sValueOrClose:
			if c == ']' {
				break
			}
			fallthrough
		case sValue:
			switch {
			case c == '"':
				end := stringEnd(s.b, s.i+1)
				if end < 0 {
					return s.fail()
				}
				s.i = end + 1
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
				s.i++
				continue
			case c == 't':
				if !s.literal("true") {
					return false
				}
			case c == 'f':
				if !s.literal("false") {
					return false
				}
			case c == 'n':
				if !s.literal("null") {
					return false
				}
			case c == '-' || c >= '0' && c <= '9':
				if _, ok := s.number(); !ok {
					return false
				}
			default:
				return s.fail()
			}
			if depth == 0 {
				return true
			}
			state = sNext
			continue
		}
		// c closes the innermost container.
		if depth == 0 {
			return s.fail()
		}
		depth--
		isObj := stack[depth/64]&(uint64(1)<<(depth%64)) != 0
		if isObj != (c == '}') {
			return s.fail()
		}
		s.i++
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
func (s *scanner) restated(v []byte) bool {
	if s.peek() == 0 || len(v) == 0 || !bytes.HasPrefix(s.b[s.i:], v) {
		return false
	}
	s.i += len(v)
	return true
}

// hasLit reports whether b holds lit at i.
func hasLit(b []byte, i int, lit string) bool {
	return i >= 0 && len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// rewind moves the scanner back to i and returns false: a fast path that
// read ahead gives the line back to the general one.
func (s *scanner) rewind(i int) bool {
	s.i = i
	return false
}

// end checks that nothing but spaces follows the top-level value.
func (s *scanner) end() bool {
	s.ws()
	if s.bad || s.i != len(s.b) {
		return s.fail()
	}
	return true
}

// skipRest skips the remaining members of an object after key() stopped
// being interesting, and its closing brace.
func (s *scanner) skipRest(o *obj) bool {
	for {
		if _, ok := s.key(o); !ok {
			return !s.bad
		}
		if !s.skip() {
			return false
		}
	}
}
