package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// Any JSON spelling of a line must give the same report. The parsers
// compare raw (still escaped) keys and values against known words ("type",
// "agent_start", "end_turn"), which is exact for what real encoders write:
// they escape control characters, quotes, backslashes, and at most
// non-ASCII, `<>&` or `/`, none of which a known word holds. An ASCII
// letter, digit or punctuation written as a \u escape ("t\u0079pe") is
// legal JSON that no encoder writes by itself. The scanner notes one in
// the keys and words it hands to the parsers (Scanner.Str; free text such
// as deltas is read with Scanner.Text and not examined), and a line that
// has one is read again from a copy with those escapes decoded
// (canonicalize); a content block likewise. The usual line pays one
// IndexByte per key and word, and no copy.
//
// Call ids, message ids, tool names (worldTools) and model names (prices)
// are also compared decoded whatever their escapes (pkg/monitor's idHash,
// isWorld, modelName.set), so non-ASCII written as escapes in one line and raw in
// the next still names the same call.

var escPrefix = []byte(`\u00`)

// NeedsCanon reports whether line holds a \u escape of a printable ASCII
// character other than the quote and the backslash (which stay escaped),
// `<`, `>` and `&` (which Go's encoder writes escaped, and no known word
// holds). A false positive (an escaped backslash before "u00") only costs
// the copy.
func NeedsCanon(line []byte) bool {
	for i := 0; ; {
		k := bytes.Index(line[i:], escPrefix)
		if k < 0 {
			return false
		}
		i += k + 2
		r, ok := Hex4(line, i)
		if ok && r >= 0x20 && r < 0x7f && r != '"' && r != '\\' && r != '<' && r != '>' && r != '&' {
			return true
		}
	}
}

// Canonicalize appends to dst[:0] the line with every \u escape of a
// printable ASCII character (but the quote and the backslash) inside a
// string written as that character. Bytes outside strings are copied as
// they are; a backslash outside a string (not JSON) gives a plain copy of
// src, so the copy is never valid where the line was not. The copy never
// shares src's memory.
func Canonicalize(dst, src []byte) []byte {
	dst = dst[:0]
	in := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case !in:
			if c == '\\' {
				return append(dst[:0], src...)
			}
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			if i+1 < len(src) && src[i+1] == 'u' {
				if r, ok := Hex4(src, i+2); ok && r >= 0x20 && r < 0x7f && r != '"' && r != '\\' {
					dst = append(dst, byte(r))
					i += 5
					continue
				}
			}
			dst = append(dst, c) // any other escape stays as written
			if i+1 < len(src) {
				i++
				c = src[i]
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// UnescapeTo decodes raw JSON string contents into dst, as much as fits,
// and returns the length written. A broken escape is copied as written.
func UnescapeTo(dst, raw []byte) int {
	n := 0
	put := func(b ...byte) {
		n += copy(dst[n:], b)
	}
	for i := 0; i < len(raw) && n < len(dst); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			put(c)
			continue
		}
		i++
		switch e := raw[i]; e {
		case 'n':
			put('\n')
		case 't':
			put('\t')
		case 'r':
			put('\r')
		case 'b':
			put('\b')
		case 'f':
			put('\f')
		case 'u':
			r, ok := Hex4(raw, i+1)
			if !ok {
				put('\\', 'u')
				continue
			}
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := Hex4(raw, i+3); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
					i += 6
				}
			}
			var tmp [4]byte
			put(tmp[:utf8.EncodeRune(tmp[:], r)]...)
		default: // \" \\ \/
			put(e)
		}
	}
	return n
}

// Hex4 decodes the four hex digits of a \u escape at b[i:i+4].
func Hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
