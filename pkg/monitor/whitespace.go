package monitor

import (
	"unicode"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// wsOnly reports whether the raw (still JSON-escaped) string contents b hold
// only whitespace, and how many bytes they decode to. It works on the
// escaped bytes without unescaping into a buffer: raw spaces, the escapes
// \n \t \r \f, \u escapes of space characters, and multi-byte UTF-8 spaces
// (U+00A0, U+2028, U+3000, ...) all count as whitespace, per unicode.IsSpace.
// It stops at the first non-space character.
func wsOnly(b []byte) (only bool, size int) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			size++
			i++
		case c == '\\':
			if i+1 >= len(b) {
				return false, size
			}
			switch b[i+1] {
			case 'n', 't', 'r', 'f':
				size++
				i += 2
			case 'u':
				r, ok := jsonscan.Hex4(b, i+2)
				if !ok || !unicode.IsSpace(r) {
					return false, size
				}
				size += utf8.RuneLen(r)
				i += 6
			default:
				return false, size
			}
		case c < utf8.RuneSelf:
			return false, size
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || !unicode.IsSpace(r) {
				return false, size
			}
			size += n
			i += n
		}
	}
	return true, size
}

// hasText reports whether raw string contents carry any non-space character.
func hasText(b []byte) bool {
	only, _ := wsOnly(b)
	return !only
}
