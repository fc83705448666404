package jsonscan

// Number reads a number literal, checking JSON's number grammar.
func (s *Scanner) Number() ([]byte, bool) {
	start := s.Pos
	end := NumberEnd(s.Buf, start)
	if end < 0 {
		return nil, s.Fail()
	}
	s.Pos = end
	return s.Buf[start:end], true
}

// NumberEnd returns the end of the number literal at i, or -1 if JSON's
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

// Integer reads a non-negative integer count: any number spelling of it
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
