package monitor

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every CLI's recorded stream read as another format is noted as not
// reading as it, naming the CLI's own format; read as its own, or with
// auto, it notes nothing (docs/design.md#format-mismatch).
func TestFormatMismatchNamesTheFormat(t *testing.T) {
	for _, f := range realRecordings(t) {
		own := filepath.Base(filepath.Dir(f))
		if data := readRecording(t, strings.TrimPrefix(f, "testdata/real/")); bytes.Count(data, []byte("\n")) < 2 {
			continue // a CLI that printed one error notice: no format claims it alone
		}
		for _, as := range Formats {
			r := replayFile(t, f, as)
			if as == own || as == FormatAuto {
				if r.FormatMismatch != "" {
					t.Errorf("%s as %s: %s", f, as, r.FormatMismatch)
				}
				continue
			}
			if r.FormatMismatch == "" || r.FormatFit != own || !strings.Contains(r.FormatMismatch, "set spec.format to "+own) {
				t.Errorf("%s as %s: mismatch %q fit %q, want %s named", f, as, r.FormatMismatch, r.FormatFit, own)
			}
		}
	}
}

// A looping claude stream read as codex: 0 steps, 0.00 and no trip, but
// the note comes by the 20th line, while the agent still runs, not at
// its end.
func TestFormatMismatchWhileTheStreamRuns(t *testing.T) {
	data := readRecording(t, "claude/identicalLoop.jsonl")
	e, _ := New(Options{Format: FormatCodex})
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) <= formatSample {
		t.Fatalf("%d lines: too short", len(lines))
	}
	for i, l := range lines {
		e.Feed(l, time.Time{})
		if i+1 < formatSample && e.FormatMismatch() != "" {
			t.Fatalf("noted at line %d, before the sample", i+1)
		}
		if i+1 == formatSample && e.FormatMismatch() == "" {
			t.Fatalf("nothing noted after %d lines", formatSample)
		}
	}
	e.Finish()
	r := e.Report()
	if r.Steps != 0 || len(r.Trips) != 0 || r.FormatFit != FormatClaude {
		t.Errorf("report %s", js(r))
	}
	want := "20 of 20 lines do not read as format codex; they read as claude: set spec.format to claude (or auto)"
	if r.FormatMismatch != want {
		t.Errorf("mismatch %q\nwant %q", r.FormatMismatch, want)
	}
}

// Lines no format reads (a CLI printing plain text): noted from the 20th,
// naming none; a shorter stream of them is not judged (an agent that
// failed with one line of text is not a format mismatch); a stream with
// a few stray lines among its events is not either.
func TestFormatMismatchWithoutAFit(t *testing.T) {
	text := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, "building step "+itoa(i))
		}
		return out
	}
	r := replayLines(t, FormatClaude, DefaultGuards(), text(25))
	if r.FormatMismatch != "20 of 20 lines do not read as format claude, nor as any format turnwatch reads" || r.FormatFit != "" {
		t.Errorf("plain text: %q fit %q", r.FormatMismatch, r.FormatFit)
	}
	if r := replayLines(t, FormatClaude, DefaultGuards(), text(19)); r.FormatMismatch != "" {
		t.Errorf("19 lines of text: %q", r.FormatMismatch)
	}
	if r := replayLines(t, FormatAuto, DefaultGuards(), text(25)); !strings.Contains(r.FormatMismatch, "any format (auto)") {
		t.Errorf("auto over plain text: %q", r.FormatMismatch)
	}
	data := readRecording(t, "claude/silentRun.jsonl")
	mixed := strings.Join(text(10), "\n") + "\n" + string(data) // 10 stray lines, then 154 events
	if r := replayData(t, []byte(mixed), FormatClaude); r.FormatMismatch != "" {
		t.Errorf("stray lines before a stream: %q", r.FormatMismatch)
	}
	var every strings.Builder // a stray line after every event
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		every.WriteString(l + "\nnot an event\n")
	}
	if r := replayData(t, []byte(every.String()), FormatClaude); r.FormatMismatch != "" || r.Unparsed != r.Lines/2 {
		t.Errorf("a stray line after every event: %q, unparsed %d of %d", r.FormatMismatch, r.Unparsed, r.Lines)
	}
}

// auto decides on the first line that is an event of exactly one format,
// and changes its mind when that format then reads nothing: a leading
// line that looks like another CLI's (codex's thread.started, gemini's
// init, a line two formats claim) does not make a claude stream read as 0
// steps and 0.00. The misleading line counts as unparsed and leaves
// nothing behind (its session id).
func TestAutoChangesItsMind(t *testing.T) {
	leads := map[string]struct {
		lines string
		noise int // lines after the misleading one that no format reads
	}{
		"codex thread":      {`{"type":"thread.started","thread_id":"forged-session"}`, 0},
		"codex usage":       {`{"type":"turn.completed","usage":{"input_tokens":1000000,"output_tokens":1000}}`, 0},
		"gemini init":       {`{"type":"init","session_id":"forged-session","model":"gemini-2.5-pro"}`, 0},
		"opencode step":     {`{"type":"step_start","sessionID":"forged-session","part":{}}`, 0},
		"claimed by two":    {`{"type":"tool_use","part":{},"tool_name":"x"}`, 0},
		"codex, then noise": {`{"type":"thread.started","thread_id":"forged-session"}` + "\nnot json\n{}", 2},
	}
	for _, file := range []string{"claude/identicalLoop.jsonl", "claude/healthy.jsonl", "pi/identicalLoop.jsonl"} {
		data := readRecording(t, file)
		own := filepath.Base(filepath.Dir(file))
		honest := replayData(t, data, own)
		for name, lead := range leads {
			t.Run(file+"/"+name, func(t *testing.T) {
				got := replayData(t, []byte(lead.lines+"\n"+string(data)), FormatAuto)
				noise := lead.noise
				// What the misleading line counted stays counted: a cost never goes down.
				first, _, _ := strings.Cut(lead.lines, "\n")
				leadCost, _ := ParseMoney(replayLines(t, FormatAuto, DefaultGuards(), []string{first}).CostUSD)
				honestCost, _ := ParseMoney(honest.CostUSD)
				if got.Format != own || got.Steps != honest.Steps || got.CostUSD != honestCost.Add(leadCost).String() ||
					len(got.Trips) != len(honest.Trips) || got.AgentSessionID != honest.AgentSessionID ||
					got.Unparsed != honest.Unparsed+1+noise || got.FormatMismatch != "" {
					t.Errorf("auto after a misleading line:\n got %s\nwant %s", js(got), js(honest))
				}
			})
		}
	}
}

// auto keeps the format of a stream that reads as it: one stray line of
// another CLI's inside it does not make it change its mind.
func TestAutoKeepsItsMind(t *testing.T) {
	data := readRecording(t, "codex/silentRun.jsonl")
	lines := strings.SplitN(string(data), "\n", 3)
	stray := lines[0] + "\n" + lines[1] + "\n" + `{"type":"system","subtype":"init","session_id":"x"}` + "\n" + lines[2]
	honest := replayData(t, data, FormatCodex)
	got := replayData(t, []byte(stray), FormatAuto)
	if got.Format != FormatCodex || got.Steps != honest.Steps || got.CostUSD != honest.CostUSD || got.Unparsed != honest.Unparsed+1 {
		t.Errorf("auto over a codex stream with a stray claude line:\n got %s\nwant %s", js(got), js(honest))
	}
}

// A restored engine judges the format as an uninterrupted one does.
func TestFormatMismatchSurvivesACheckpoint(t *testing.T) {
	data := readRecording(t, "claude/identicalLoop.jsonl")
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for _, cut := range []int{1, 10, 19, 20, 30} {
		a, _ := New(Options{Format: FormatCodex})
		for _, l := range lines[:cut] {
			a.Feed(l, time.Time{})
		}
		cp, err := a.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(Options{Format: FormatCodex})
		if err := b.Restore(cp); err != nil {
			t.Fatal(err)
		}
		for _, l := range lines[cut:] {
			b.Feed(l, time.Time{})
		}
		b.Finish()
		if r := b.Report(); r.FormatMismatch == "" || r.FormatFit != FormatClaude || !strings.HasPrefix(r.FormatMismatch, "20 of 20 ") {
			t.Errorf("cut at %d: %q", cut, r.FormatMismatch)
		}
	}
}

// Noise beside a stream that parses (a CLI's stderr in its container log:
// Gemini CLI prints its error trace there) is counted unparsed, and is no
// mismatch: only a stream that reads as another format, or as nothing at
// all, notes one.
func TestFormatNoiseIsNoMismatch(t *testing.T) {
	e, err := New(Options{Format: FormatGemini})
	if err != nil {
		t.Fatal(err)
	}
	e.Feed([]byte(`{"type":"init","timestamp":"2026-01-05T09:00:00Z","session_id":"s1","model":"gemini-2.5-pro"}`), time.Time{})
	for i := 0; i < 30; i++ {
		e.Feed([]byte("    at processTicksAndRejections (node:internal/process/task_queues:95:5)"), time.Time{})
	}
	e.Finish()
	if r := e.Report(); r.FormatMismatch != "" || r.Unparsed != 30 {
		t.Errorf("formatMismatch %q, unparsed %d: want no mismatch, 30 unparsed", r.FormatMismatch, r.Unparsed)
	}
}

// A lower report within a price table's difference keeps the higher figure
// without a note; one below half of it is noted.
func TestCostNoteBelowHalf(t *testing.T) {
	for _, c := range []struct {
		reported string
		noted    bool
	}{{"0.0104", false}, {"0.0064", true}, {"0", true}} {
		e, _ := New(Options{Format: FormatClaude})
		was, _ := ParseMoney("0.013")
		rep, _ := ParseMoney(c.reported)
		if got := e.notBelow(was, rep); got != was {
			t.Errorf("%s: kept %s, want %s", c.reported, got, was)
		}
		if noted := e.CostMismatch() != ""; noted != c.noted {
			t.Errorf("%s: noted %v, want %v", c.reported, noted, c.noted)
		}
	}
}
