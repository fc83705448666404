package monitor

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// TestPiMemoAgrees: a message read with the memo of the messages before it
// reads as without one (the same fields, position, failure and escape
// flag), over sequences in which each message grows its text from the one
// before, as pi's do, or changes anywhere: in the text the memo holds, at
// its end (escapes cut or kept there), in the usage, or after them.
func TestPiMemoAgrees(t *testing.T) {
	const usage = `{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0023140000000000003}}`
	// The pieces around the text and the total, as pi writes them and not.
	blocks := []string{``, `,{"type":"toolCall","id":"t1","name":"bash","arguments":{}}`, `,{"type":"toolCall","id":"t1","n\u0061me":"bash","arguments":{"a":[1]}}`}
	firsts := []string{``, `,"textSignature":"sig"`, `,"t\u0065xt":"y"`}
	stops := []string{`"toolUse"`, `""`, `null`, `"error","errorMessage":"rate limited"`, `"error","errorMessage":null`, `"error","errorMessage":""`, `"st\u006fp"`}
	totals := []string{`0.0023140000000000003`, `0.25`, `1e-3`, `0`, `NaN`, `"1"`, `-1`, `01`}
	// think, when set, opens the content with a thinking block.
	msg := func(role, think, text, first, block, usage, stop string) string {
		thinking := ""
		if think != "" {
			thinking = `{"type":"thinking","thinking":"` + think[1:] + `","thinkingSignature":"sig"},`
		}
		return `{"role":"` + role + `","content":[` + thinking + `{"type":"text","text":"` + text + `"` + first + `}` + block + `],` +
			`"api":"openai-responses","provider":"openai","model":"gpt-5.1-codex","usage":` + usage + `,"stopReason":` + stop + `,"timestamp":1767401001200}`
	}
	r := rand.New(rand.NewPCG(21, 22))
	pieces := []string{`a`, `b `, `\"`, `\\`, `\n`, `\u00e9`, `"`, `\`, `}`, `]`, `,`, `{`, `:`, ` `, `é`}
	alphabet := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, `0`, `-`, `n`, `u`, `x`, `.`}
	var memo piMemo
	check := func(m string) {
		line := []byte(m + `,"assistantMessageEvent":{"type":"text_delta"}}`)
		var a, b jsonscan.Scanner
		var ma, mb piMessage
		a.Reset(line)
		b.Reset(line)
		readPiMessage(&a, &ma, &memo)
		readPiMessage(&b, &mb, nil)
		if a.Bad != b.Bad || a.Esc != b.Esc || !a.Bad && (a.Pos != b.Pos || !reflect.DeepEqual(ma, mb)) {
			t.Fatalf("%s\nusage %q template %q %q %q %q:\nwith memo: %+v at %d bad %v esc %v\nwithout:   %+v at %d bad %v esc %v",
				m, memo.usage, memo.tmpl.head, memo.tmpl.str, memo.tmpl.mid, memo.tmpl.tail, ma, a.Pos, a.Bad, a.Esc, mb, b.Pos, b.Bad, b.Esc)
		}
	}
	texts, templates := 0, 0
	for seq := 0; seq < 400; seq++ {
		role, think, text, first, block, u, stop := "assistant", "", "", firsts[0], blocks[0], usage, stops[0]
		if seq%2 == 1 {
			think = "+" // a thinking block first, which streams before the text
		}
		for step := 0; step < 40; step++ {
			switch k := r.IntN(14); {
			case k < 7: // the text grows, as a delta does, or the thinking before it
				for range 1 + r.IntN(4) {
					if think != "" && text == "" && r.IntN(4) > 0 {
						think += pieces[r.IntN(len(pieces))]
						continue
					}
					text += pieces[r.IntN(len(pieces))]
				}
			case k == 7 && len(text) > 0: // it is cut
				text = text[:r.IntN(len(text))]
			case k == 8 && len(text) > 0: // a byte in it changes
				p := r.IntN(len(text))
				text = text[:p] + alphabet[r.IntN(len(alphabet))] + text[p+1:]
			case k == 9: // the usage changes, or comes back
				u = usage
				if r.IntN(2) == 0 {
					p := r.IntN(len(u))
					u = u[:p] + alphabet[r.IntN(len(alphabet))] + u[p+1:]
				}
			case k == 10: // the total changes
				u = strings.Replace(usage, `0.0023140000000000003`, totals[r.IntN(len(totals))], 1)
			case k == 11:
				first, block = firsts[r.IntN(len(firsts))], blocks[r.IntN(len(blocks))]
			case k == 12:
				stop = stops[r.IntN(len(stops))]
			case k == 13:
				role = []string{"assistant", "user"}[r.IntN(2)]
			}
			m := msg(role, think, text, first, block, u, stop)
			if r.IntN(8) == 0 { // a byte anywhere else changes, or goes
				p := r.IntN(len(m))
				m = m[:p] + alphabet[r.IntN(len(alphabet))] + m[p+min(1+r.IntN(2), len(m)-p):]
			}
			head := `{"role":"` + role + `","content":[` + piBlockHeads[0]
			if think != "" {
				head = `{"role":"` + role + `","content":[` + piBlockHeads[1]
			}
			if len(memo.tmpl.str) > 0 && strings.HasPrefix(m, head+string(memo.tmpl.str)) {
				texts++
			}
			if len(memo.tmpl.head) > 0 && strings.HasPrefix(m, string(memo.tmpl.head)+string(memo.tmpl.str)) && strings.Contains(m, string(memo.tmpl.mid)) {
				templates++
			}
			check(m)
		}
	}
	if texts < 4000 || templates < 2000 {
		t.Fatalf("the template's string was matched on %d messages, its pieces on %d; want most of 16,000", texts, templates)
	}
	t.Logf("the template's string was matched on %d messages, its pieces on %d", texts, templates)
}

// TestPiMemoResumes pins where a template's string ends: between
// escapes, so a scan of the next line's string resumes there as at a
// string's start.
func TestPiMemoResumes(t *testing.T) {
	for _, c := range []struct{ before, after string }{
		{`ab\\`, `ab\\x`},   // the string ends after an escaped backslash
		{`ab\\`, `ab\\\"c`}, // and an escaped quote follows
		{`ab\"`, `ab\"c\\`},
		{`ab`, `ab\u0022c`},
		{``, `x`},
	} {
		var memo piMemo
		var resumed bool
		for _, text := range []string{c.before, c.after} {
			line := []byte(`{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"api":"x","provider":"y","model":"z",` +
				`"usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":1}},` +
				`"stopReason":"stop","timestamp":1}`)
			var s jsonscan.Scanner
			s.Reset(line)
			s.Pos = len(`{"role":"assistant","content":`)
			resumed = memo.resume(line, s.Pos+len(`[`+piBlockHeads[0]), 0) > s.Pos+len(`[`+piBlockHeads[0])
			got, at := readPiContent(&s, &memo)
			want := line[len(`{"role":"assistant","content":`) : len(`{"role":"assistant","content":[{"type":"text","text":"`)+len(text)+3]
			if s.Bad || !bytes.Equal(got, want) || at.N != 1 || string(got[at.At[0][0]:at.At[0][1]]) != text {
				t.Errorf("%q then %q: read %q (bad %v) at %v; want %q", c.before, c.after, got, s.Bad, at, want)
			}
			s.Reset(line)
			var m piMessage
			if grown := readPiMessage(&s, &m, &memo); s.Bad || grown != nil && string(memo.tmpl.str) != text {
				t.Errorf("%q then %q: the template keeps %q", c.before, c.after, memo.tmpl.str)
			}
		}
		if c.before != "" && !resumed {
			t.Errorf("%q then %q: the scan did not resume", c.before, c.after)
		}
	}
}

// TestPiMemoStreams: an engine with the memo and one without read pi's
// recorded streams, the fake agent's and both benchmark generators' to the
// same State and Report after every line.
func TestPiMemoStreams(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/pi/*.jsonl")
	scen, _ := filepath.Glob("../../test/fakeagent/scenarios/pi/*.log")
	streams := map[string][]byte{
		"short": genPiShortStream(1 << 20).data,
		"long":  genPiStream(4 << 20).data,
	}
	for _, name := range append(files, scen...) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		streams[name] = data
	}
	for name, data := range streams {
		if n := memoAgrees(t, data); n == 0 {
			t.Errorf("%s: no line read", name)
		}
	}
}

// FuzzPiMemo: on any input, the engine with the memo reads what the engine
// without it reads, line by line.
func FuzzPiMemo(f *testing.F) {
	seedCorpus(f, "pi")
	f.Add(genPiShortStream(64 << 10).data)
	f.Fuzz(func(t *testing.T, data []byte) { memoAgrees(t, data) })
}

// memoAgrees feeds data to two pi engines, one with the memo, and fails at
// the first line after which their State or Report differ. It returns the
// number of lines.
func memoAgrees(t *testing.T, data []byte) int {
	t.Helper()
	var es [2]*Engine
	for k := range es {
		e, err := New(Options{Format: FormatPi, Guards: benchGuards()})
		if err != nil {
			t.Fatal(err)
		}
		es[k] = e
	}
	lr := NewLineReader(bytes.NewReader(data), 1<<20)
	n := 0
	for {
		line, ok := lr.Next()
		if !ok || lr.Skipped() {
			return n
		}
		n++
		es[0].Feed(line, time.Time{})
		piMemoOn = false
		es[1].Feed(line, time.Time{})
		piMemoOn = true
		if a, b := es[0].State(), es[1].State(); !reflect.DeepEqual(a, b) {
			t.Fatalf("line %d %.200q: with the memo %+v, without %+v", n, line, a, b)
		}
		if a, b := es[0].Report(), es[1].Report(); !reflect.DeepEqual(a, b) {
			t.Fatalf("line %d %.200q: with the memo %+v, without %+v", n, line, a, b)
		}
	}
}
