package monitor

import (
	"strings"
	"testing"
)

// TestWholeBlocks: a message that streamed no deltas is read for
// repetition from its whole text and thinking blocks; one that streamed
// deltas is read from its deltas only, never both
// (docs/design.md#whole-text-blocks). With the default 4096 bytes, 5000 repeated bytes in one block
// trip; 3000 as blocks and 3000 more as deltas of the same message do not,
// whichever comes first.
func TestWholeBlocks(t *testing.T) {
	pat := "I will check the file again. "
	long, half := strings.Repeat(pat, 5000/len(pat)), strings.Repeat(pat, 3000/len(pat))
	pieces := func(text string, line func(string) string) []string {
		var out []string
		for len(text) > 0 {
			k := min(100, len(text))
			out = append(out, line(text[:k]))
			text = text[k:]
		}
		return out
	}
	gText := func(text string, delta bool) string {
		return js(map[string]any{"type": "message", "role": "assistant", "content": text, "delta": delta})
	}
	gDelta := func(text string) string { return gText(text, true) }
	claudeDelta := func(text string) string { return cTextDelta("", text) }
	ocStep := `{"type":"step_start","part":{"type":"step-start"}}`
	ocReasoning := func(text string) string {
		return js(map[string]any{"type": "reasoning", "part": map[string]any{"type": "reasoning", "text": text}})
	}
	codexReasoning := func(text string) string {
		return js(map[string]any{"type": "item.completed", "item": map[string]any{"id": "r1", "type": "reasoning", "text": text}})
	}
	var pi stream
	pi.add(`{"type":"agent_start"}`)
	for _, p := range pieces(half, func(s string) string { return s }) {
		pi.piDelta("text", p, 0)
	}
	m := piMsg([]any{piText(half)}, 0, "stop")
	pi.add(js(map[string]any{"type": "message_end", "message": m}))

	tests := []struct {
		name, format string
		lines        []string
		trips        bool
	}{
		{"codex reasoning item", FormatCodex, []string{`{"type":"turn.started"}`, codexReasoning(long)}, true},
		{"opencode reasoning part", FormatOpencode, []string{ocStep, ocReasoning(long)}, true},
		{"claude thinking block without deltas", FormatClaude, []string{cInit(),
			cAssistant("m1", []any{map[string]any{"type": "thinking", "thinking": long}}, nil)}, true},
		{"gemini whole message", FormatGemini, []string{gInit, gUser, gText(long, false)}, true},
		{"claude deltas, then the assistant line restating them", FormatClaude, append(append([]string{cInit(), cStart("", "m1")},
			pieces(half, claudeDelta)...), cAssistant2("", "m1", []any{map[string]any{"type": "text", "text": half}}, nil)), false},
		{"pi deltas, then message_end restating them", FormatPi, pi.lines, false},
		{"gemini whole message, then deltas of the same message", FormatGemini,
			append([]string{gInit, gUser, gText(half, false)}, pieces(half, gDelta)...), false},
		{"deltas alone still trip", FormatGemini, append([]string{gInit, gUser}, pieces(long, gDelta)...), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			tripped := len(r.Trips) == 1 && r.Trips[0].Detector == DetectorRepetition
			if tripped != tt.trips || r.Unparsed != 0 || len(r.Trips) > 1 {
				t.Errorf("trips %s unparsed %d, want a repetition trip: %v", js(r.Trips), r.Unparsed, tt.trips)
			}
		})
	}
}
