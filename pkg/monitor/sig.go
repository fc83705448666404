package monitor

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// A call's signature is a 64-bit hash of its name and its arguments in
// canonical JSON: object members in any order, insignificant whitespace,
// string escapes ("\u0041" vs "A") and number spellings ("1.0" vs "1") do
// not change it. The hash is structural (objects hash as an order-free sum
// of member hashes), so no canonical text is ever built or allocated.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func combine(h, v uint64) uint64 { return mix64(h ^ (v + 0x9e3779b97f4a7c15 + h<<6 + h>>2)) }

// Type tags keep a string "1" and a number 1 apart.
const (
	tagString = iota + 1
	tagNumber
	tagTrue
	tagFalse
	tagNull
	tagArray
	tagObject
	tagRaw
)

// callSig hashes a tool name (raw string contents) and its arguments (a raw
// JSON value, or empty for none).
func callSig(name, args []byte) uint64 { return combine(hashString(name), ArgsDigest(args)) }

// ArgsDigest is the digest of a tool call's arguments, a raw JSON value, in
// canonical JSON as callSig compares them (key order, spacing, escapes and
// number spellings do not change it; what is not JSON is compared as
// bytes; nothing for none). It reads the value once and allocates
// nothing, whatever its size: the sidecar and the agent's hook name a call
// by it (nudgefile.CallKey). It is not a cryptographic hash: both sides
// count calls by it, so two arguments that collide are one call to both.
func ArgsDigest(args []byte) uint64 {
	if len(args) == 0 {
		return tagNull
	}
	var s jsonscan.Scanner
	s.Reset(args)
	v, ok := hashValue(&s, 0)
	if !ok || !s.End() {
		v = combine(tagRaw, hashBytes(fnvOffset, args)) // not JSON: compare bytes
	}
	return v
}

func hashBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// hashString hashes the unescaped contents of a raw JSON string.
func hashString(raw []byte) uint64 { return combine(tagString, fnvUnescaped(raw)) }

// fnvUnescaped is the FNV-1a hash of the unescaped contents of a raw JSON
// string: for contents without a backslash, hashBytes(fnvOffset, raw).
func fnvUnescaped(raw []byte) uint64 {
	h := uint64(fnvOffset)
	var tmp [4]byte
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			j++
		}
		h = hashBytes(h, raw[i:j])
		if j >= len(raw) {
			break
		}
		if j+1 >= len(raw) {
			h = hashBytes(h, raw[j:])
			break
		}
		c := raw[j+1]
		i = j + 2
		switch c {
		case 'n':
			h = hashByte(h, '\n')
		case 't':
			h = hashByte(h, '\t')
		case 'r':
			h = hashByte(h, '\r')
		case 'b':
			h = hashByte(h, '\b')
		case 'f':
			h = hashByte(h, '\f')
		case 'u':
			r, ok := jsonscan.Hex4(raw, j+2)
			if !ok {
				h = hashBytes(h, raw[j:j+2])
				continue
			}
			i = j + 6
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if lo, ok := jsonscan.Hex4(raw, i+2); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
					i += 6
				}
			}
			n := utf8.EncodeRune(tmp[:], r)
			h = hashBytes(h, tmp[:n])
		default: // \" \\ \/
			h = hashByte(h, c)
		}
	}
	return h
}

// hashValue hashes the value at the scanner. Deeper than maxDepth, values
// are compared by their raw bytes.
func hashValue(s *jsonscan.Scanner, depth int) (uint64, bool) {
	switch s.Peek() {
	case '"':
		raw, ok := s.Str()
		return hashString(raw), ok
	case '{':
		if depth >= jsonscan.MaxDepth {
			raw, ok := s.Value()
			return combine(tagRaw, hashBytes(fnvOffset, raw)), ok
		}
		s.Enter()
		var o jsonscan.Obj
		sum := uint64(0)
		for {
			k, ok := s.Key(&o)
			if !ok {
				break
			}
			v, ok := hashValue(s, depth+1)
			if !ok {
				return 0, false
			}
			sum += mix64(combine(hashString(k), v)) // order-free
		}
		return combine(tagObject, sum+uint64(o.N)), !s.Bad
	case '[':
		if depth >= jsonscan.MaxDepth {
			raw, ok := s.Value()
			return combine(tagRaw, hashBytes(fnvOffset, raw)), ok
		}
		s.EnterArray()
		var a jsonscan.Arr
		h := uint64(tagArray)
		for s.Elem(&a) {
			v, ok := hashValue(s, depth+1)
			if !ok {
				return 0, false
			}
			h = combine(h, v)
		}
		return combine(h, uint64(a.N)), !s.Bad
	case 't':
		return tagTrue, s.Literal("true")
	case 'f':
		return tagFalse, s.Literal("false")
	case 'n':
		return tagNull, s.Literal("null")
	}
	lit, ok := s.Number()
	if !ok {
		return 0, false
	}
	return hashNumber(lit), true
}

// hashNumber hashes a number by value when float64 holds it exactly enough
// to compare ("1", "1.0" and "1e0" agree), else by its literal.
func hashNumber(lit []byte) uint64 {
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil || math.IsInf(f, 0) {
		return combine(tagNumber, hashBytes(fnvOffset, lit))
	}
	if f == 0 {
		f = 0 // -0 == 0
	}
	return combine(tagNumber, math.Float64bits(f))
}

func hashByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }
