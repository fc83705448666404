package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strings"
)

// Obj iterates the members of one object; N counts members read, and Key
// is the raw key of the member next stopped at.
type Obj struct {
	N   int
	Key []byte
	// Order, if set, is the order in which the format writes this
	// object's keys: the key of member n is first compared, whole, with
	// order[n] (a few word compares, no scan). A hint only: any other key
	// or spelling is read as usual.
	Order []KeyWord
}

// KeyOrder builds an obj.order. A name must be at most 21 bytes with no
// quote or backslash (the match then reads exactly what keySlow reads).
func KeyOrder(names ...string) []KeyWord {
	order := make([]KeyWord, len(names))
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

// Enter consumes '{'.
func (s *Scanner) Enter() bool {
	if s.Peek() != '{' {
		return s.Fail()
	}
	s.Pos++
	return true
}

// Key reads the next member's key (raw) and its colon, leaving the scanner
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

// Next reads the next member's key into o.key, leaving the scanner at the
// value. It returns false at the closing brace or on an error.
func (s *Scanner) Next(o *Obj) bool {
	k, ok := s.Key(o)
	o.Key = k
	return ok
}

// Find skips members of o up to the next one named name and leaves the
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

// Into is find for a member whose value is an object: it enters that
// object, skipping members of that name with any other value (null).
func (s *Scanner) Into(o *Obj, name string) bool {
	for s.Find(o, name) {
		if s.Object() {
			return true
		}
	}
	return false
}

// Object enters the value if it is an object, and otherwise skips it
// (null, or any other value) and returns false.
func (s *Scanner) Object() bool {
	if s.Peek() != '{' {
		s.Skip()
		return false
	}
	s.Pos++
	return true
}

// Arr iterates the elements of one array.
type Arr struct{ N int }

// EnterArray consumes '['.
func (s *Scanner) EnterArray() bool {
	if s.Peek() != '[' {
		return s.Fail()
	}
	s.Pos++
	return true
}

// Elem positions the scanner at the next element; false at ']' or on error.
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

// SkipRest skips the remaining members of an object after key() stopped
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
