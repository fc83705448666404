package quote

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", `Bash {"command":"ls -la"}`, `Bash {"command":"ls -la"}`},
		{"clear the screen", "\x1b[2J\x1b[Hok", `\x1b[2J\x1b[Hok`},
		{"colour", "\x1b[1;31mTRIPPED\x1b[0m", `\x1b[1;31mTRIPPED\x1b[0m`},
		{"carriage return", "done\rTRIPPED", `done\rTRIPPED`},
		{"line feed: a fake row", "ls\n>>     12  +1s  TRIPPED identicalCalls (runaway)", `ls\n>>     12  +1s  TRIPPED identicalCalls (runaway)`},
		{"tab", "a\tb", `a\tb`},
		{"bell, backspace, NUL", "\a\b\x00", `\a\b\x00`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"next line", "a\u0085b", `a\u0085b`},
		{"line separator", "a\u2028TRIPPED", `a\u2028TRIPPED`},
		{"paragraph separator", "a\u2029b", `a\u2029b`},
		{"right-to-left override", "exe.\u202etxt", `exe.\u202etxt`},
		{"bidi isolates and marks", "\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`},
		{"not UTF-8", "a\xffb", "a\uFFFDb"},
		{"kept: accents, CJK, emoji with a joiner", "café 日本 👩\u200d💻", "café 日本 👩\u200d💻"},
		{"kept: backslashes as written", `C:\dir \x1b \n`, `C:\dir \x1b \n`},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.in)
			if got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := Text(got); again != got {
				t.Errorf("Text is not idempotent: %q, then %q", got, again)
			}
		})
	}
}

// safe says whether s carries nothing Text escapes.
func safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafe(r) {
			return false
		}
	}
	return true
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"\x1b[2J", "a\r\nb", "\u2028\u202e", "\xff\xfe", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !safe(got) {
			t.Fatalf("Text(%q) = %q: still unsafe", s, got)
		}
		if Text(got) != got {
			t.Fatalf("Text(%q) = %q is not a fixed point", s, got)
		}
		if safe(s) && got != s {
			t.Fatalf("Text changed the safe %q to %q", s, got)
		}
		if strings.Count(got, "\n") != 0 {
			t.Fatalf("a line break left in %q", got)
		}
	})
}

func BenchmarkText(b *testing.B) {
	plain := strings.Repeat(`Bash {"command":"go test ./..."} `, 8)
	hostile := strings.Repeat("ok\x1b[2J\r\n\u202e ", 24)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Text(plain)
		}
	})
	b.Run("hostile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Text(hostile)
		}
	})
}
