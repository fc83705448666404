package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPad(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		n        int
		lines    int // output lines
		prefixed int // output lines that start with the timestamp prefix
	}{
		{name: "no padding", in: "2026-01-05T09:00:00Z a\n", n: 0, lines: 1, prefixed: 1},
		{name: "one short padding line per line", in: "2026-01-05T09:00:00Z a\n2026-01-05T09:00:01Z b\n", n: 100, lines: 4, prefixed: 4},
		{name: "long padding is split", in: "2026-01-05T09:00:00Z a\n", n: 9000, lines: 4, prefixed: 4},
		{name: "a line without prefix pads without one", in: "a\n", n: 10, lines: 2, prefixed: 0},
		{name: "a last line without newline is padded", in: "2026-01-05T09:00:00Z a", n: 10, lines: 2, prefixed: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := pad(strings.NewReader(tc.in), &out, tc.n); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			prefixed, seen := 0, map[string]bool{}
			for _, l := range lines {
				if strings.HasPrefix(l, "2026-01-05T") {
					prefixed++
				}
				_, body, _ := cutTimestamp(l)
				if strings.Contains(body, padHead) {
					if len(body) > padLineMax {
						t.Errorf("padding line of %d bytes, more than %d", len(body), padLineMax)
					}
					if seen[body] {
						t.Errorf("padding line repeated: %.60s", body)
					}
					seen[body] = true
				}
			}
			if len(lines) != tc.lines || prefixed != tc.prefixed {
				t.Errorf("%d lines, %d prefixed; want %d, %d:\n%.400s", len(lines), prefixed, tc.lines, tc.prefixed, out.String())
			}
		})
	}
}
