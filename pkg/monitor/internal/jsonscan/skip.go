package jsonscan

import (
	"bytes"
)

// Value skips one value and returns its raw bytes.
func (s *Scanner) Value() ([]byte, bool) {
	s.SkipSpace()
	start := s.Pos
	if !s.Skip() {
		return nil, false
	}
	return s.Buf[start:s.Pos], true
}

// Skip steps over one value of any kind without recursion, checking the
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

// Restated steps over the value ahead if its bytes are exactly v, a whole
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
