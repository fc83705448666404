package monitor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// Fuzz targets, one per parser (plus auto, the scanner and decimals),
// seeded with every corpus line and file of their format. The engine must
// never panic on untrusted input, count every line, and count a line that
// is not one JSON object as unparsed. `make fuzz-brief` runs each for a few
// seconds.

func seedCorpus(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata/corpus", dir, "*.*json*"))
	fixtures, _ := filepath.Glob(filepath.Join("testdata/fixtures", dir+"_*.jsonl"))
	if dir == "" {
		files, _ = filepath.Glob("testdata/corpus/*/*.*json*")
		fixtures, _ = filepath.Glob("testdata/fixtures/*.jsonl")
	}
	for _, name := range append(files, fixtures...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// The stream as recorded and re-encoded in an equivalent spelling
		// (spelling_test.go): escapes, number spellings, look-alike members.
		for _, d := range [][]byte{data, reencode(f, data, 1)} {
			f.Add(d)
			for _, line := range bytes.Split(d, []byte("\n")) {
				f.Add(line)
			}
		}
	}
	for _, l := range spellingSeeds {
		f.Add([]byte(l))
	}
	// The fake agent's streams of cycles, repeated errors and repeated
	// text, so the pattern detectors' folds are exercised.
	scen, _ := filepath.Glob(filepath.Join("../../test/fakeagent/scenarios", dir, "*.log"))
	if dir == "" {
		scen, _ = filepath.Glob("../../test/fakeagent/scenarios/*/*.log")
	}
	for _, name := range scen {
		switch strings.TrimSuffix(filepath.Base(name), ".log") {
		case "cycle", "repeatedErrors", "repetition":
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("\x00\xff{\"type\":"))
	f.Add([]byte(`{"type":"x","a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`))
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":` +
		strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}]}}`))
}

// spellingSeeds are the unusual spellings of issue 11, one line each.
var spellingSeeds = []string{
	`{"t\u0079pe":"agent_start"}`,
	`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"l\u0065ngth"}}`,
	`{"type":"tool_execution_start","toolCallId":"c\u00e9","toolName":"run\u005ftests","args":{}}`,
	`{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5\u002d2","content":[],"usage":{"input_tokens":1e6,"output_tokens":1E+6,"cache_read_input_tokens":1000000.0}}}`,
	`{"type":"result","subtype":"success","total_cost_usd":"5"}`,
	`{"type":"result","subtype":"success","total_cost_usd":NaN}`,
	`{"type":"step_finish","part":{"reason":"stop","cost":-1}}`,
	`{"type":"agent_start"}}`,
	`{"x_lookalike":{"type":"result","subtype":"success"},"type":"user","message":{"content":"{\"type\":\"result\"}"}}`,
}

func fuzzFormat(f *testing.F, format, dir string) {
	seedCorpus(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := DefaultGuards()
		g.MaxCostUSD = "0.01"
		g.WorldTools = []string{"bash", "Bash"}
		g.CycleRepeats, g.AnswerAware = 3, true
		if len(data)%2 == 1 { // half the inputs with a small repetition guard: it trips within short inputs
			g.RepeatedTextBytes = 48
		}
		e, err := New(Options{Format: format, Guards: g})
		if err != nil {
			t.Fatal(err)
		}
		lr := NewLineReader(bytes.NewReader(data), 1<<16)
		n, oneObject := 0, true
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for {
			line, ok := lr.Next()
			if !ok {
				break
			}
			n++
			if lr.Skipped() {
				e.FeedSkipped(line, now)
				continue
			}
			if _, rest := splitTimestamp(line); len(bytes.TrimSpace(rest)) > 0 && // a kubectl prefix alone is a blank line
				(!json.Valid(rest) && !scannerLeniency(rest) && !costLeniency(rest) || bytes.TrimSpace(rest)[0] != '{') {
				oneObject = false
			}
			now = now.Add(time.Minute)
			before := e.State().Cost
			e.Feed(line, now)
			e.Tick(now.Add(time.Second))
			if c := e.State().Cost; c < before { // docs/design.md#a-cost-never-goes-down
				t.Fatalf("line %d lowered the cost from %s to %s", n, before, c)
			}
		}
		e.Finish()
		r := e.Report()
		if r.Lines != n || r.Unparsed > n || r.Steps < 0 || len(r.Trips) > 1 {
			t.Fatalf("report %+v for %d lines", r, n)
		}
		if n == 1 && !oneObject && r.Unparsed != 1 && len(r.Trips) == 0 {
			t.Fatalf("a line that is not a JSON object must be unparsed: %+v", r)
		}
	})
}

func FuzzPi(f *testing.F)       { fuzzFormat(f, FormatPi, "pi") }
func FuzzClaude(f *testing.F)   { fuzzFormat(f, FormatClaude, "claude") }
func FuzzCodex(f *testing.F)    { fuzzFormat(f, FormatCodex, "codex") }
func FuzzOpencode(f *testing.F) { fuzzFormat(f, FormatOpencode, "opencode") }
func FuzzGemini(f *testing.F)   { fuzzFormat(f, FormatGemini, "gemini") }
func FuzzAuto(f *testing.F)     { fuzzFormat(f, FormatAuto, "") }

// FuzzScanner: skipping a value agrees with encoding/json on validity, and
// canonical signatures never panic.
func FuzzScanner(f *testing.F) {
	seedCorpus(f, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		var s jsonscan.Scanner
		s.Reset(data)
		got := s.Skip() && s.End()
		if got && !json.Valid(data) && !scannerLeniency(data) {
			t.Fatalf("scanner accepts invalid JSON %q", data)
		}
		if !got && json.Valid(data) {
			t.Fatalf("scanner rejects valid JSON %q", data)
		}
		callSig([]byte("t"), data)
		wsOnly(data)
	})
}

// scannerLeniency: the scanner jumps over strings without checking their
// escapes, raw control bytes or UTF-8 (that would cost a pass over every
// byte), and has no nesting limit (encoding/json stops at 10000 levels);
// everything else it checks as encoding/json does.
func scannerLeniency(b []byte) bool {
	return bytes.IndexByte(b, '\\') >= 0 || hasControl(b) || !utf8.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > 10000
}

// costLeniency: a cost member may hold Python's NaN or Infinity (ignored
// as a cost, the line still counts).
func costLeniency(b []byte) bool {
	return bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Infinity"))
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 { // raw tabs/CRs are fine between tokens, not inside strings
			return true
		}
	}
	return false
}

// FuzzDecimal: parsing money never panics and agrees with itself through
// its own rendering.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "5.00", "1.5e-7", "0.30000000000000004", "-1", "1e400", "9223372.036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		back, ok := parseDecimal([]byte(m.String()))
		if !ok || back != m {
			t.Fatalf("%q -> %s -> %v %v", s, m, back, ok)
		}
	})
}

// FuzzRepetition: the repeated-text fold never panics, and a run it reports
// is real: some byte of the delta ends a run of that many bytes with that
// period, spanning two copies. (Input without backslashes, so the raw
// string is the text.)
func FuzzRepetition(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 300)), uint8(7), uint16(64))
	f.Add([]byte("x"+strings.Repeat("I will check it again. ", 40)), uint8(200), uint16(0))
	f.Add([]byte(strings.Repeat("\u3000 ", 100)+strings.Repeat("zz", 10)), uint8(1), uint16(40))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8, guard uint16) {
		text := bytes.ReplaceAll(data, []byte{'\\'}, []byte{'/'})
		maxP := int(guard) / 2
		var tr repeatTracker
		size := int(cut)%97 + 1
		for off := 0; off < len(text); off += size {
			end := min(len(text), off+size)
			run, p := tr.feedRaw(text[off:end], maxP)
			if run == 0 {
				continue
			}
			if p < 1 || p > repWindow || int64(p)*2 > run || maxP > 0 && p > maxP {
				t.Fatalf("run %d of period %d (maxP %d)", run, p, maxP)
			}
			if !runEndsIn(text, off, end, int(run), p) {
				t.Fatalf("no run of %d bytes with period %d ends in [%d, %d) of %q", run, p, off, end, text)
			}
		}
	})
}

// runEndsIn reports whether a run of n bytes with period p ends at some
// position in [from, to).
func runEndsIn(text []byte, from, to, n, p int) bool {
	for e := from + 1; e <= to; e++ {
		if e < n {
			continue
		}
		ok := true
		for i := e - n + p; i < e && ok; i++ {
			ok = text[i] == text[i-p]
		}
		if ok {
			return true
		}
	}
	return false
}
