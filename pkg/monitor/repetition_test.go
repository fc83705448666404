package monitor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRepetitionCheck(t *testing.T) {
	tests := []struct {
		n, run int
		want   bool
	}{{4096, 4095, false}, {4096, 4096, true}, {4096, 5000, true}, {0, 99999, false}}
	for _, tt := range tests {
		reason, msg, failed := repetition(&State{Guards: Guards{RepeatedTextBytes: tt.n}, RepeatBytes: tt.run, RepeatPeriod: 37})
		if failed != tt.want {
			t.Errorf("n %d run %d: failed=%v want %v", tt.n, tt.run, failed, tt.want)
		}
		if failed && (reason != DetectorRepetition || msg != fmt.Sprintf("the model repeated a 37-byte pattern for %d bytes", tt.n)) {
			t.Errorf("reason %q message %q", reason, msg)
		}
	}
}

// rawJSON returns the raw (escaped) contents of s as a JSON string.
func rawJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// The tracker finds the period and the run, fed in deltas of any size:
// the byte at which the run reaches n is found exactly, for periods up to
// 256 bytes, after text that does not repeat.
func TestRepeatTrackerRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	prose := func(n int) string {
		var b strings.Builder
		genText(r, &b, n)
		return b.String()[:n]
	}
	pattern := func(p int) string { // p bytes of text with no shorter period
		b := []byte(prose(p))
		b[0] = '#'
		for i := 1; i < p; i++ {
			if b[i] == '#' || b[i] >= 0x80 { // ASCII: a cut character would change the length
				b[i] = '_'
			}
		}
		return string(b)
	}
	tests := []struct {
		name   string
		lead   string
		pat    string
		copies int
	}{
		{"one byte", prose(300), "x", 5000},
		{"a word", prose(1000), "again ", 1000},
		{"37 bytes", prose(500), pattern(37), 200},
		{"a period of 200", prose(700), pattern(200), 30},
		{"a period of 256", prose(700), pattern(256), 20},
		{"no prose before", "", pattern(64), 100},
		{"escapes count decoded", prose(100), "line\n\t\"q\"\\ é ", 800},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 7, 64, 1000} {
			t.Run(fmt.Sprintf("%s/deltas of %d", tt.name, size), func(t *testing.T) {
				text := tt.lead + strings.Repeat(tt.pat, tt.copies)
				n := 4096
				want := len(tt.lead) + n // the byte (1-based) at which the run reaches n
				var tr repeatTracker
				fed := 0
				got := -1
				for fed < len(text) && got < 0 {
					d := text[fed:min(len(text), fed+size)]
					for !utfBoundary(text, fed+len(d)) { // deltas hold whole characters
						d = text[fed : fed+len(d)+1]
					}
					run, p := tr.feedRaw(rawJSON(d), n/2)
					fed += len(d)
					if run >= int64(n) {
						got = fed
						if p != len(tt.pat) {
							t.Errorf("period %d, want %d", p, len(tt.pat))
						}
					}
				}
				// The run is reached within the delta that carries byte
				// want, or within repEvery bytes after it: a run is found
				// at a probe and measured back within the window held.
				if got < want || got > want+size+repEvery+4 {
					t.Fatalf("reached %d bytes at byte %d, want the delta carrying byte %d", n, got, want)
				}
			})
		}
	}
}

func utfBoundary(s string, i int) bool { return i >= len(s) || s[i]&0xc0 != 0x80 }

// Prose, code and whitespace do not trip: only a pattern with text does.
func TestRepeatTrackerQuiet(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var b strings.Builder
	genText(r, &b, 1<<20)
	var tr repeatTracker
	best := int64(0)
	for s := b.String(); len(s) > 0; {
		k := min(len(s), 1+r.IntN(200))
		run, _ := tr.feedRaw(rawJSON(s[:k]), 2048)
		best = max(best, run)
		s = s[k:]
	}
	if best >= 4096 {
		t.Fatalf("a run of %d bytes in prose", best)
	}
	var ws repeatTracker
	if run, _ := ws.feedRaw(rawJSON(strings.Repeat(" \n\t", 5000)), 2048); run != 0 {
		t.Fatalf("a whitespace pattern counted %d bytes", run)
	}
	if run, _ := ws.feedRaw(rawJSON(strings.Repeat("\u3000", 5000)), 2048); run != 0 {
		t.Fatalf("an ideographic-space pattern counted %d bytes", run)
	}
}

// Through the fold: the trip line, per message and kind, and whole blocks
// for formats without deltas.
func TestRepetitionFold(t *testing.T) {
	pat := "I will check the file again. "
	deltas := func(kind string, text string, size int) *stream {
		s := &stream{}
		s.add(`{"type":"agent_start"}`)
		for len(text) > 0 {
			k := min(size, len(text))
			s.piDelta(kind, text[:k], 0)
			text = text[k:]
		}
		return s
	}
	t.Run("pi text deltas trip on the delta carrying byte 4096", func(t *testing.T) {
		s := deltas("text", strings.Repeat(pat, 200), 100)
		r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
		line := 1 + (4096+99)/100 // agent_start, then 100 bytes a line
		want := []Trip{{Class: ClassDegenerate, Detector: DetectorRepetition, Message: fmt.Sprintf("the model repeated a %d-byte pattern for 4096 bytes", len(pat)), Line: line}}
		if js(r.Trips) != js(want) {
			t.Fatalf("trips %s, want %s", js(r.Trips), js(want))
		}
	})
	t.Run("thinking too", func(t *testing.T) {
		s := deltas("thinking", strings.Repeat(pat, 200), 100)
		r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorRepetition {
			t.Fatalf("trips %s", js(r.Trips))
		}
	})
	t.Run("a new message starts over", func(t *testing.T) {
		s := &stream{}
		s.add(`{"type":"agent_start"}`)
		for range 3 { // 3 x 2900 bytes, each its own message
			for range 29 {
				s.piDelta("text", strings.Repeat(pat, 100)[:100], 0)
			}
			s.piSpeak("done")
		}
		r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
		if len(r.Trips) != 0 {
			t.Fatalf("trips %s, want none", js(r.Trips))
		}
	})
	t.Run("text and thinking count apart", func(t *testing.T) {
		s := &stream{}
		s.add(`{"type":"agent_start"}`)
		for i := range 60 { // 3000 bytes of each, interleaved
			kind := "text"
			if i%2 == 1 {
				kind = "thinking"
			}
			s.piDelta(kind, strings.Repeat(pat, 4)[:100], 0)
		}
		r := replayLines(t, FormatPi, DefaultGuards(), s.lines)
		if len(r.Trips) != 0 {
			t.Fatalf("trips %s, want none", js(r.Trips))
		}
	})
	t.Run("codex agent_message as a whole block", func(t *testing.T) {
		line := js(map[string]any{"type": "item.completed", "item": map[string]any{"id": "i1", "type": "agent_message", "text": strings.Repeat(pat, 150)}})
		r := replayLines(t, FormatCodex, DefaultGuards(), []string{`{"type":"turn.started"}`, line})
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorRepetition || r.Trips[0].Line != 2 {
			t.Fatalf("trips %s, want repetition at line 2", js(r.Trips))
		}
	})
	t.Run("claude text block, once although restated by partials", func(t *testing.T) {
		text := strings.Repeat(pat, 100) // 2900 bytes: twice would be over 4096
		lines := []string{cInit()}
		for i := 0; i < len(text); i += 100 {
			lines = append(lines, js(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta",
				"index": 0, "delta": map[string]any{"type": "text_delta", "text": text[i : i+100]}}}))
		}
		lines = append(lines, cAssistant("m1", []any{map[string]any{"type": "text", "text": text}}, "end_turn"))
		r := replayLines(t, FormatClaude, DefaultGuards(), lines)
		if len(r.Trips) != 0 {
			t.Fatalf("trips %s, want none", js(r.Trips))
		}
		r = replayLines(t, FormatClaude, DefaultGuards(), []string{cInit(), cAssistant("m1", []any{map[string]any{"type": "text", "text": text + text}}, "end_turn")})
		if len(r.Trips) != 1 || r.Trips[0].Detector != DetectorRepetition {
			t.Fatalf("trips %s, want repetition on the whole block", js(r.Trips))
		}
	})
	t.Run("degeneration first in one event", func(t *testing.T) {
		// "ab  " repeated: a whitespace-only delta can carry the 64th byte.
		s := deltas("text", strings.Repeat("ab  ", 16)[:62], 62)
		s.piDelta("text", "  ", 0)
		for _, tt := range []struct {
			ws   int
			want string
		}{{1, DetectorDegeneration}, {0, DetectorRepetition}} {
			g := guards(func(g *Guards) { g.WhitespaceDeltas, g.WhitespaceBytes, g.RepeatedTextBytes = tt.ws, 0, 64 })
			r := replayLines(t, FormatPi, g, s.lines)
			if len(r.Trips) != 1 || r.Trips[0].Detector != tt.want || r.Trips[0].Line != 3 {
				t.Fatalf("whitespaceDeltas %d: trips %s, want %s at line 3", tt.ws, js(r.Trips), tt.want)
			}
		}
	})
}

// feedDelta reports what feedRaw of every delta reports from the delta on
// which the message's text could reach the guard, and never a run that
// reaches it before: the same trips on the same deltas.
func TestRepeatFeedDeltaAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 300; i++ {
		var b strings.Builder
		genText(r, &b, r.IntN(3000))
		if r.IntN(2) == 0 {
			pat := b.String()
			pat = pat[:min(len(pat), 1+r.IntN(300))]
			b.WriteString(strings.Repeat(pat+"\n\"é", 1+r.IntN(60)))
		}
		raw := rawJSON(b.String())
		n := []int{512, 600, 2048, 4096, 6000}[r.IntN(5)]
		var exact, lazy repeatTracker
		fed := 0
		cut := make([]bool, len(raw)+1) // deltas hold whole escapes and characters
		for i := 0; i < len(raw); {
			switch {
			case raw[i] == '\\' && raw[i+1] == 'u':
				i += 6
			case raw[i] == '\\':
				i += 2
			default:
				i++
			}
			cut[i] = i == len(raw) || raw[i]&0xc0 != 0x80
		}
		for len(raw) > 0 {
			k := min(len(raw), 1+r.IntN(150))
			for !cut[fed+k] {
				k++
			}
			d := raw[:k]
			raw = raw[k:]
			fed += len(d)
			r1, p1 := exact.feedRaw(d, n/2)
			r2, p2 := lazy.feedDelta(d, n)
			if exact.N >= int64(n) && (r1 != r2 || p1 != p2) || r2 >= int64(n) != (r1 >= int64(n)) {
				t.Fatalf("case %d, guard %d, %d raw bytes fed, %d decoded: feedRaw %d/%d, feedDelta %d/%d", i, n, fed, exact.N, r1, p1, r2, p2)
			}
		}
		lazy.flush()
		if lazy.N != exact.N || lazy.Buf != exact.Buf || lazy.NC != exact.NC || lazy.Full != exact.Full {
			t.Fatalf("case %d: state differs after the text", i)
		}
		for k := range lazy.NC { // From is the last delta's; slots past NC are stale
			if l, x := lazy.Cands[k], exact.Cands[k]; l.P != x.P || l.M != x.M || l.Text != x.Text {
				t.Fatalf("case %d: candidate %d: %+v, want %+v", i, k, l, x)
			}
		}
	}
}

// Deltas that end inside what decodes as one character (half a surrogate
// pair, an escaped backslash) leave the tracker as feedRaw does.
func TestRepeatFeedDeltaEscapes(t *testing.T) {
	tests := []struct {
		name   string
		deltas []string
	}{
		{"split surrogate pairs", []string{`ab \ud83d`, `\ude00 cd`, `\ud83d`, `\ude00`}},
		{"escaped backslashes", []string{`x\\`, `\\y`, `\\`, `n z`}},
		{"escapes at the edges", []string{`\n`, `q\"`, `\u00e9`, `\t`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var exact, lazy repeatTracker
			for i := 0; i < 400; i++ {
				for _, d := range tt.deltas {
					exact.feedRaw([]byte(d), 2048)
					lazy.feedDelta([]byte(d), 1<<20)
				}
			}
			lazy.flush()
			if lazy.N != exact.N || lazy.Buf != exact.Buf || lazy.NC != exact.NC || lazy.Full != exact.Full {
				t.Fatalf("state differs: N %d, want %d", lazy.N, exact.N)
			}
		})
	}
}
