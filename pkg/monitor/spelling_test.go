package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// Re-encoding a stream's lines as equivalent JSON never changes a report:
// every corpus file and fixture, each line decoded and written again with
// its keys reordered, whitespace between tokens, ASCII and non-ASCII
// characters as \u escapes (keys and values), other number spellings
// ("1e6", "1000000.0", "12345E-6"), and unknown members whose content looks
// like events ("type":"result", a tool_use block), is replayed with its
// format and with auto.
func TestReencodedStreams(t *testing.T) {
	for _, name := range streamFiles(t) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		format := formatOf(name)
		for _, f := range []string{format, FormatAuto} {
			want := js(replayData(t, data, f))
			for seed := uint64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprintf("%s/%s/%d", filepath.Base(name), f, seed), func(t *testing.T) {
					re := reencode(t, data, seed)
					if got := js(replayData(t, re, f)); got != want {
						t.Errorf("re-encoded report\n got %s\nwant %s\nstream:\n%s", got, want, re)
					}
				})
			}
		}
	}
}

// streamFiles lists every corpus file, fixture and fake agent scenario.
func streamFiles(t testing.TB) []string {
	a, _ := filepath.Glob("testdata/corpus/*/*.*json*")
	b, _ := filepath.Glob("testdata/fixtures/*.jsonl")
	// The fake agent's scenarios: every detector's trip, the pattern detectors' too.
	c, _ := filepath.Glob("../../test/fakeagent/scenarios/*/*.log")
	if len(a) == 0 || len(b) == 0 || len(c) == 0 {
		t.Fatal("no corpus, fixtures or scenarios")
	}
	return append(append(a, b...), c...)
}

// formatOf names a stream file's format: its corpus folder or its
// fixture's prefix.
func formatOf(name string) string {
	if dir := filepath.Base(filepath.Dir(name)); dir != "fixtures" {
		return dir
	}
	return strings.SplitN(filepath.Base(name), "_", 2)[0]
}

// reencode writes every line of data that is JSON again in an equivalent
// spelling chosen by seed; other lines stay as they are.
func reencode(t testing.TB, data []byte, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var out bytes.Buffer
	for _, line := range bytes.Split(data, []byte("\n")) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var v any
		if len(bytes.TrimSpace(line)) == 0 || d.Decode(&v) != nil || d.More() {
			out.Write(line)
		} else {
			w := &spellWriter{r: r}
			w.ws()
			w.value(v, false)
			w.ws()
			out.Write(w.b)
		}
		out.WriteByte('\n')
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

type spellWriter struct {
	b []byte
	r *rand.Rand
}

// opaque names members whose value the engine reads whole (tool arguments,
// hashed as canonical JSON): unknown members are not added inside them.
var opaque = map[string]bool{"arguments": true, "input": true, "args": true, "parameters": true,
	"command": true, "changes": true, "query": true, "prompt": true}

func (w *spellWriter) ws() {
	for range w.r.IntN(3) {
		w.b = append(w.b, " \t"[w.r.IntN(2)])
	}
}

func (w *spellWriter) value(v any, inOpaque bool) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v)+2)
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		if !inOpaque {
			keys = slices.Insert(keys, w.r.IntN(len(keys)+1), "x_lookalike")
		}
		w.b = append(w.b, '{')
		for i, k := range keys {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.ws()
			w.str(k)
			w.ws()
			w.b = append(w.b, ':')
			w.ws()
			if k == "x_lookalike" {
				w.b = append(w.b, lookalike...)
			} else {
				w.value(v[k], inOpaque || opaque[k])
			}
			w.ws()
		}
		w.b = append(w.b, '}')
	case []any:
		w.b = append(w.b, '[')
		for i, e := range v {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.ws()
			w.value(e, inOpaque)
			w.ws()
		}
		w.b = append(w.b, ']')
	case string:
		w.str(v)
	case json.Number:
		w.b = append(w.b, respell(string(v), w.r)...)
	case bool:
		w.b = fmt.Append(w.b, v)
	case nil:
		w.b = append(w.b, "null"...)
	}
}

// lookalike is an unknown member's value that a careless parser would
// take for events: a final result with a cost, a tool call, a stop reason.
const lookalike = `{"type":"result","subtype":"success","is_error":true,"total_cost_usd":99,"status":"error",` +
	`"message":{"id":"msg_fake","role":"assistant","content":[{"type":"tool_use","id":"toolu_fake","name":"Bash","input":{"type":"agent_end"}}],"stop_reason":"max_tokens"},` +
	`"item":{"id":"item_fake","type":"command_execution"},"part":{"callID":"c_fake","tool":"bash"},"text":"{\"type\":\"turn.completed\"}"}`

// str writes s as a JSON string, escaping about a third of its
// characters as \u escapes (both hex cases, surrogate pairs above the
// BMP), and "/" as "\/" now and then.
func (w *spellWriter) str(s string) {
	w.b = append(w.b, '"')
	for _, c := range s {
		esc := w.r.IntN(3) == 0
		switch {
		case c == '"':
			w.b = append(w.b, `\"`...)
		case c == '\\':
			w.b = append(w.b, `\\`...)
		case c == '/' && esc:
			w.b = append(w.b, `\/`...)
		case c < 0x20 || esc && c != utf8.RuneError:
			w.escape(c)
		default:
			w.b = utf8.AppendRune(w.b, c)
		}
	}
	w.b = append(w.b, '"')
}

func (w *spellWriter) escape(c rune) {
	f := "\\u%04x"
	if w.r.IntN(2) == 0 {
		f = "\\u%04X"
	}
	if c > 0xFFFF {
		c -= 0x10000
		w.b = fmt.Appendf(w.b, f, 0xD800+(c>>10))
		w.b = fmt.Appendf(w.b, f, 0xDC00+(c&0x3FF))
		return
	}
	w.b = fmt.Appendf(w.b, f, c)
}

// respell writes a JSON number literal another way with the same value:
// an integer as "N.0", "NE+0" or with its trailing zeros as an exponent
// ("1e6"); a fraction as digits and a negative exponent ("12345E-6").
func respell(lit string, r *rand.Rand) string {
	neg := strings.HasPrefix(lit, "-")
	body := strings.TrimPrefix(lit, "-")
	if strings.ContainsAny(body, "eE") {
		return lit
	}
	sign := ""
	if neg {
		sign = "-"
	}
	intPart, frac, _ := strings.Cut(body, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return sign + []string{"0", "0.0", "0e0", "0E+3"}[r.IntN(4)]
	}
	exp := -len(frac) // value = digits x 10^exp
	switch r.IntN(3) {
	case 0:
		return lit
	case 1:
		if exp == 0 {
			return sign + digits + ".0"
		}
		return sign + digits + "E" + fmt.Sprint(exp)
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if exp >= 0 {
		return sign + trimmed + "e+" + fmt.Sprint(exp)
	}
	return sign + trimmed + "e" + fmt.Sprint(exp)
}

// The parsing cases of issue 11, each a line a real stream could carry
// once an encoder or the model spells it unusually.
func TestSpellingCases(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 3000) + `1` + strings.Repeat(`]}`, 3000)
	claudeDeep := func(i int) string {
		return `{"type":"assistant","message":{"id":"m` + itoa(i) + `","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"t` + itoa(i) +
			`","name":"Bash","input":{"command":"ls","x":` + deep + `}}],"stop_reason":"tool_use"}}`
	}
	var six []string
	for i := range 6 {
		six = append(six, claudeDeep(i))
	}
	tests := []struct {
		name, format string
		g            Guards
		lines        []string
		check        func(Report) bool
	}{
		{"escaped key", FormatPi, DefaultGuards(), []string{`{"t\u0079pe":"agent_start"}`, `{"\u0074ype":"agent_end"}`},
			func(r Report) bool { return r.Unparsed == 0 && r.Result }},
		{"escaped stop reason", FormatPi, DefaultGuards(), []string{
			`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"stopReason":"l\u0065ngth"}}`},
			func(r Report) bool {
				return r.StopReason == StopLength && len(r.Trips) == 1 && r.Trips[0].Detector == DetectorLengthStop
			}},
		{"escaped world tool", FormatPi, guards(func(g *Guards) { g.WorldTools = []string{"run_tests"} }),
			worldToolStream(`run\u005ftests`), func(r Report) bool { return len(r.Trips) == 0 && r.Steps == 8 }},
		{"escaped non-ASCII world tool", FormatPi, guards(func(g *Guards) { g.WorldTools = []string{"prüfen"} }),
			worldToolStream(`pr\u00fcfen`), func(r Report) bool { return len(r.Trips) == 0 && r.Steps == 8 }},
		{"escaped model", FormatClaude, DefaultGuards(), []string{
			`{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5-2025092\u0039","content":[],"usage":{"input_tokens":1000000}}}`},
			func(r Report) bool { return r.CostUSD == "3.00" }},
		{"exponent tokens", FormatClaude, DefaultGuards(), []string{
			`{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1e6,"output_tokens":1E+5,"cache_read_input_tokens":500000.0,"cache_creation_input_tokens":25e-1}}}`},
			func(r Report) bool { return r.CostUSD == "4.6500075" }}, // 3 + 1.5 + 0.15 + 2 x 3.75e-6
		{"string tokens", FormatClaude, DefaultGuards(), []string{
			`{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}],"usage":{"input_tokens":"1000000","output_tokens":1e5}}}`},
			func(r Report) bool { return r.Steps == 1 && r.Unparsed == 0 && r.CostUSD == "1.50" }},
		{"deep arguments", FormatClaude, DefaultGuards(), six,
			func(r Report) bool {
				return r.Steps == 4 && len(r.Trips) == 1 && r.Trips[0].Detector == DetectorIdenticalCalls
			}},
		{"auto waits for valid JSON", FormatAuto, DefaultGuards(), []string{`{"type":"agent_start"}}`, cInit(),
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`},
			func(r Report) bool { return r.Format == FormatClaude && r.Steps == 1 && r.Unparsed == 1 }},
		{"auto reads escapes", FormatAuto, DefaultGuards(), []string{`{"t\u0079pe":"agent_st\u0061rt"}`},
			func(r Report) bool { return r.Format == FormatPi && r.Unparsed == 0 }},
		{"auto escaped subtype", FormatAuto, DefaultGuards(), []string{`{"type":"result","s\u0075btype":"success","is_error":false,"total_cost_usd":0.5}`},
			func(r Report) bool {
				return r.Format == FormatClaude && r.Unparsed == 0 && r.Result && r.CostUSD == "0.50"
			}},
		{"escaped call ids", FormatPi, DefaultGuards(), []string{
			`{"type":"tool_execution_start","toolCallId":"call_\u00e91","toolName":"bash","args":{"command":"ls"}}`,
			`{"type":"tool_execution_end","toolCallId":"call_é1","toolName":"bash","isError":false}`,
			`{"type":"tool_execution_start","toolCallId":"call_é1","toolName":"bash","args":{"command":"ls"}}`},
			func(r Report) bool { return r.Steps == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := replayLines(t, tt.format, tt.g, tt.lines); !tt.check(r) {
				t.Errorf("report %s", js(r))
			}
		})
	}
}

// worldToolStream: eight identical pi calls of tool name (raw), each
// answered successfully: a worldTools tool resets the streak each time.
func worldToolStream(name string) []string {
	var lines []string
	for i := range 8 {
		id := "call_" + itoa(i)
		lines = append(lines,
			`{"type":"tool_execution_start","toolCallId":"`+id+`","toolName":"`+name+`","args":{}}`,
			`{"type":"tool_execution_end","toolCallId":"`+id+`","toolName":"`+name+`","isError":false}`)
	}
	return lines
}

// Integer fields read any spelling of their value.
func TestIntegerSpellings(t *testing.T) {
	tests := map[string]int64{"0": 0, "12": 12, "1e6": 1000000, "1E+6": 1000000, "1000000.0": 1000000, "2.5e3": 2500,
		"25e-1": 2, "0.9": 0, "1e-9": 0, "-5": 0, "-1e6": 0, "1.5": 1, "123456789012345678901234": 1 << 58, "1e300": 1 << 58,
		"0e0": 0, "10E0": 10, "0.001e3": 1, "null": 0}
	for lit, want := range tests {
		var s jsonscan.Scanner
		s.Reset([]byte(lit))
		if got, ok := s.Integer(); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", lit, got, ok, want)
		}
	}
}

// The canonical copy decodes escapes of printable ASCII inside strings
// only, keeps every other escape, and never decodes what is not JSON.
func TestCanonicalize(t *testing.T) {
	tests := map[string]string{
		`{"t\u0079pe":"a\u0041\u005f"}`:          `{"type":"aA_"}`,
		`{"a":"\u0022\u005c\u005C\u00e9\u001b"}`: `{"a":"\u0022\u005c\u005C\u00e9\u001b"}`,
		`{"a":"\\u0041\n\"\u0041"}`:              `{"a":"\\u0041\n\"A"}`,
		`{"a":\u0031}`:                           `{"a":\u0031}`,
		`{"a":"\u004`:                            `{"a":"\u004`,
	}
	for in, want := range tests {
		buf := make([]byte, 0, 4)
		if got := jsonscan.Canonicalize(buf, []byte(in)); string(got) != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	src := []byte(`{"a":\u0031}`)
	if got := jsonscan.Canonicalize(nil, src); &got[0] == &src[0] {
		t.Error("the copy shares the line's memory")
	}
}
