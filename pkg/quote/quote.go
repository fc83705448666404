// Package quote makes the agent's words safe to show a person: a tool name,
// a call's arguments, an error text, anything the agent's stream or its
// files carry, quoted in a trip message, an Event, a condition or
// `kubectl turnwatch explain` (docs/security.md). A terminal obeys the
// control characters in what it prints (ESC clears the screen or moves the
// cursor, CR rewrites the line) and a line break starts a row the agent
// wrote; Unicode bidi controls reorder what is shown. Text escapes them all,
// so an agent cannot make its words look like turnwatch's own.
package quote

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is s with every character a terminal or a reader could take for
// something else escaped, as Go would write it in a string literal: C0 and
// C1 controls and DEL (`\n`, `\r`, `\t`, `\x1b`, `\u0085`...), line and
// paragraph separators (`\u2028`, `\u2029`) and bidi controls (`\u202e`,
// `\u2066`...). Bytes that are not UTF-8 become U+FFFD. Everything else is
// kept as it is, backslashes too, so Text of Text is Text: a message
// escaped by the sidecar and again by the controller reads the same.
func Text(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if unsafe(r) {
			writeEscape(&b, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// firstUnsafe is the index of the first byte from which s needs escaping,
// or -1: printable ASCII, the common case, is passed over byte by byte.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return i
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafe says whether r must be escaped. U+FFFD itself is safe: a byte that
// is not UTF-8 is written as it.
func unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Bidi_Control)
}

// writeEscape writes r as a Go escape: `\n`, `\x1b`, `\u202e`.
func writeEscape(b *strings.Builder, r rune) {
	var buf [16]byte
	q := strconv.AppendQuoteRuneToASCII(buf[:0], r) // '\x1b', '\u202e'
	b.Write(q[1 : len(q)-1])
}
