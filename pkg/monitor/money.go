package monitor

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
)

// moneyScale is the number of decimal places Money keeps. Twelve places make
// token pricing exact for prices quoted to a millionth of a dollar per
// million tokens (tokens x $/MTok / 1e6 fits in 1e-12 units).
const moneyScale = 12

const moneyUnit = 1_000_000_000_000 // 10^moneyScale

// Money is an exact decimal amount of US dollars with twelve decimal places,
// held as an integer count of 1e-12 USD. Arithmetic saturates instead of
// overflowing (the range is about +-9.2 million dollars). Its JSON form is a
// decimal string ("5.00").
type Money int64

var errMoney = errors.New("not a decimal amount")

// ParseMoney reads a decimal amount ("5", "5.00", "0.000192", "1.5e-7").
// Digits beyond the twelfth decimal place are rounded half to even.
func ParseMoney(s string) (Money, error) {
	m, ok := parseDecimal([]byte(s))
	if !ok {
		return 0, errMoney
	}
	return m, nil
}

// parseDecimal parses a JSON number (or a plain decimal string) into Money
// without allocating. Exponents are honoured, so JavaScript's "1.5e-7"
// renderings of tiny costs are read exactly; digits past the twelfth
// decimal place round half to even; magnitudes past the range saturate.
func parseDecimal(b []byte) (Money, bool) {
	if m, ok := plainDecimal(b); ok {
		return m, true
	}
	return parseDecimalSlow(b)
}

// pow10 holds 10^0 to 10^12.
var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12}

// plainDecimal reads the spelling a cost almost always has, up to six
// integer digits and any number of decimals ("0.002314", "5", "12.5",
// "0.0023140000000000003" from a float sum), digits past the twelfth
// decimal rounding half to even as parseDecimalSlow does. ok is false
// for any other spelling (a sign, an exponent, longer integers), which
// parseDecimalSlow reads.
func plainDecimal(b []byte) (Money, bool) {
	var ip, fp uint64
	i := 0
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		if i == 6 {
			return 0, false
		}
		ip = ip*10 + uint64(b[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	if i == len(b) {
		return Money(ip * moneyUnit), true
	}
	if b[i] != '.' {
		return 0, false
	}
	i++
	start := i
	for ; i < len(b) && i-start < moneyScale && b[i]-'0' < 10; i++ {
		fp = fp*10 + uint64(b[i]-'0')
	}
	nf := i - start
	if nf == 0 {
		return 0, false
	}
	u := ip*moneyUnit + fp*pow10[moneyScale-nf]
	if i < len(b) && b[i]-'0' < 10 { // past the twelfth decimal: round half to even
		next, sticky := b[i]-'0', false
		for i++; i < len(b) && b[i]-'0' < 10; i++ {
			sticky = sticky || b[i] != '0'
		}
		if next > 5 || next == 5 && (sticky || u%2 == 1) {
			u++
		}
	}
	if i != len(b) {
		return 0, false
	}
	return Money(u), true
}

// parseDecimalSlow is parseDecimal for any spelling.
func parseDecimalSlow(b []byte) (Money, bool) {
	var digits [40]byte // significant digits, leading zeros dropped
	nd := 0
	sticky := false // a non-zero digit did not fit in digits
	point := 0      // position of the decimal point after digits[0:point]
	i := 0
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	sawDigit, frac := false, false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' && !frac {
			frac = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		sawDigit = true
		switch {
		case nd == 0 && c == '0':
			if frac {
				point--
			}
			continue
		case nd < len(digits):
			digits[nd] = c - '0'
			nd++
		case c != '0':
			sticky = true
		}
		if !frac {
			point++
		}
	}
	if !sawDigit || b[i-1] == '.' {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			eneg = b[i] == '-'
			i++
		}
		start, e := i, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 100000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == start {
			return 0, false
		}
		if eneg {
			e = -e
		}
		point += e
	}
	if i != len(b) {
		return 0, false
	}
	if nd == 0 {
		return 0, true
	}
	// The integer part of value*10^12 is digits[:cut]; digits[cut] rounds.
	cut := point + moneyScale
	if cut > 19 {
		return saturate(neg), true
	}
	var u uint64
	for k := 0; k < cut; k++ {
		u *= 10
		if k < nd {
			u += uint64(digits[k])
		}
	}
	if cut >= 0 && cut < nd {
		next := digits[cut]
		for _, d := range digits[cut+1 : nd] {
			if d != 0 {
				sticky = true
			}
		}
		if next > 5 || next == 5 && (sticky || u%2 == 1) {
			u++
		}
	}
	if u > math.MaxInt64 {
		return saturate(neg), true
	}
	if neg {
		return -Money(u), true
	}
	return Money(u), true
}

func saturate(neg bool) Money {
	if neg {
		return Money(math.MinInt64)
	}
	return Money(math.MaxInt64)
}

// Add returns m+n, saturating at the range limits.
func (m Money) Add(n Money) Money {
	s := m + n
	if n > 0 && s < m {
		return Money(math.MaxInt64)
	}
	if n < 0 && s > m {
		return Money(math.MinInt64)
	}
	return s
}

// mulTokens prices count tokens at perMTok dollars per million tokens:
// count x perMTok / 1e6, exact in 1e-12 units whenever the price has at
// most six decimals (otherwise rounded half to even).
func mulTokens(count int64, perMTok Money) Money {
	if count <= 0 || perMTok <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(count), uint64(perMTok))
	if hi >= 1_000_000 {
		return Money(math.MaxInt64)
	}
	q, r := bits.Div64(hi, lo, 1_000_000)
	if r*2 > 1_000_000 || r*2 == 1_000_000 && q%2 == 1 {
		q++
	}
	if q > math.MaxInt64 {
		return Money(math.MaxInt64)
	}
	return Money(q)
}

// String renders m as a plain decimal with at least two decimal places
// ("0.00", "5.00", "0.012345").
func (m Money) String() string { return string(m.appendTo(nil)) }

func (m Money) appendTo(b []byte) []byte {
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = -uint64(m)
	}
	whole, frac := u/moneyUnit, u%moneyUnit
	b = strconv.AppendUint(b, whole, 10)
	b = append(b, '.')
	var digits [moneyScale]byte
	for i := moneyScale - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := moneyScale
	for n > 2 && digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}

// MarshalText renders the decimal string.
func (m Money) MarshalText() ([]byte, error) { return m.appendTo(nil), nil }

// UnmarshalText parses a decimal string.
func (m *Money) UnmarshalText(b []byte) error {
	v, ok := parseDecimal(b)
	if !ok {
		return errMoney
	}
	*m = v
	return nil
}
