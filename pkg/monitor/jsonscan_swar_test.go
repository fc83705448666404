package monitor

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestScanStringAgrees: the word-at-a-time string scan finds the same
// closing quote as the quote-and-count-backslashes scan, on strings of
// every length around the word size and the switch to IndexByte, with
// quotes, backslashes and non-ASCII at every position; and when it says
// there is no backslash, there is none.
func TestScanStringAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []string{"a", "a", "a", "a", `"`, `\`, `\\`, `\"`, "é", "\x80", "\xff"}
	for n := 0; n < 20000; n++ {
		var b bytes.Buffer
		for l := r.IntN(60); b.Len() < l; {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		line := b.Bytes()
		for from := 0; from <= min(len(line), 3); from++ {
			want := stringEndLong(line, from, from)
			got, bs := scanString(line, from)
			if got != want {
				t.Fatalf("scanString(%q, %d) = %d, want %d", line, from, got, want)
			}
			if end := got; end >= 0 && !bs && bytes.IndexByte(line[from:end], '\\') >= 0 {
				t.Fatalf("scanString(%q, %d) says no backslash", line, from)
			}
		}
	}
}
