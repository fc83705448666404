package monitor

import (
	"strings"
	"testing"
)

func TestDegenerationCheck(t *testing.T) {
	g := DefaultGuards()
	tests := []struct {
		deltas, bytes int
		want          bool
	}{
		{127, 127, false},
		{128, 128, true}, // the 128th delta, inclusive
		{2, 8191, false},
		{2, 8192, true}, // the delta that brings the run to 8 KiB
	}
	for _, tt := range tests {
		reason, _, failed := degeneration(&State{Guards: g, WhitespaceDeltas: tt.deltas, WhitespaceBytes: tt.bytes})
		if failed != tt.want || failed && reason != DetectorDegeneration {
			t.Errorf("%d deltas %d bytes: failed=%v, want %v", tt.deltas, tt.bytes, failed, tt.want)
		}
	}
	if _, _, failed := degeneration(&State{WhitespaceDeltas: 1e6, WhitespaceBytes: 1e9}); failed {
		t.Error("zero guards switch it off")
	}
}

// Through the fold: what counts as whitespace-only, resets, empty deltas,
// runs across messages, claude and gemini deltas, and bytes.
func TestDegenerationRun(t *testing.T) {
	g := guards(func(g *Guards) { g.WhitespaceDeltas, g.WhitespaceBytes = 4, 64 })
	tests := []struct {
		name   string
		deltas []string
		trip   int // delta index (1-based) that trips, 0 for none
	}{
		{"spaces and newlines", []string{" ", "\n", "\t", "\r\n"}, 4},
		{"escaped unicode spaces", []string{"\u00a0", "\u2028", "\u3000", " "}, 4},
		{"a word resets", []string{" ", " ", "x", " ", " ", " "}, 0},
		{"empty deltas are ignored", []string{" ", "", " ", "", " ", " "}, 6},
		{"punctuation is not whitespace", []string{" ", ".", " ", " ", " "}, 0},
		{"bytes", []string{strings.Repeat(" ", 40), strings.Repeat("\n", 24)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			for _, d := range tt.deltas {
				s.piDelta("thinking", d, 0)
			}
			r := replayLines(t, FormatPi, g, s.lines)
			if tt.trip == 0 {
				if len(r.Trips) != 0 {
					t.Fatalf("trips %s, want none", js(r.Trips))
				}
				return
			}
			if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorDegeneration || r.Trips[0].Line != tt.trip {
				t.Fatalf("trips %s, want degeneration at line %d", js(r.Trips), tt.trip)
			}
		})
	}
	t.Run("carries across messages", func(t *testing.T) {
		s := &stream{}
		s.piDelta("text", " ", 0)
		s.piDelta("text", " ", 0)
		s.add(js(map[string]any{"type": "message_end", "message": piMsg([]any{piText("  ")}, 0, "stop")}))
		s.piDelta("thinking", " ", 0)
		s.piDelta("thinking", " ", 0)
		r := replayLines(t, FormatPi, g, s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Line != 5 {
			t.Fatalf("trips %s, want one at line 5", js(r.Trips))
		}
	})
	t.Run("claude partial messages", func(t *testing.T) {
		d := func(typ, field, text string) string {
			return js(map[string]any{"type": "stream_event", "session_id": "s",
				"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": typ, field: text}}})
		}
		lines := []string{d("thinking_delta", "thinking", "\n"), d("text_delta", "text", " "),
			d("input_json_delta", "partial_json", " "), d("thinking_delta", "thinking", "\n"), d("thinking_delta", "thinking", "\n")}
		r := replayLines(t, FormatClaude, g, lines)
		if len(r.Trips) != 1 || r.Trips[0].Line != 5 {
			t.Fatalf("trips %s, want one at line 5 (input_json_delta is not text)", js(r.Trips))
		}
	})
	t.Run("gemini delta messages", func(t *testing.T) {
		d := `{"type":"message","timestamp":"2026-11-30T10:00:00.000Z","role":"assistant","content":"  ","delta":true}`
		r := replayLines(t, FormatGemini, g, []string{d, d, d, d})
		if len(r.Trips) != 1 || r.Trips[0].Line != 4 {
			t.Fatalf("trips %s, want one at line 4", js(r.Trips))
		}
	})
}

func TestWsOnly(t *testing.T) {
	tests := []struct {
		raw  string // JSON-escaped contents
		only bool
		size int
	}{
		{` `, true, 1},
		{`\n\t\r\f`, true, 4},
		{`\u0020\u00a0\u2003`, true, 1 + 2 + 3},
		{" \u3000", true, 4},
		{`\u0041`, false, 0},
		{`\b`, false, 0},
		{`\/`, false, 0},
		{`\u00`, false, 0},
		{"\xff", false, 0},
		{`\`, false, 0},
		{`  a`, false, 2},
	}
	for _, tt := range tests {
		only, size := wsOnly([]byte(tt.raw))
		if only != tt.only || only && size != tt.size {
			t.Errorf("%q: only=%v size=%d, want %v %d", tt.raw, only, size, tt.only, tt.size)
		}
	}
}
