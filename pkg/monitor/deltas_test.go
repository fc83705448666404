package monitor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// TestDeltasHiddenReal: every real recording of a CLI that never shows
// deltas (agents.CLI.HidesDeltas: codex and opencode) that carries
// assistant text or thinking hides its deltas; the other codex and
// opencode recordings, and every claude (recorded with
// --include-partial-messages), gemini and pi one show them or carry
// nothing to judge. Each with its scenario's guards, as TestRealRecordings
// replays them (a trip that ends the turn inside the message still
// judges it: codex and opencode repetition), with the format named and
// with auto.
func TestDeltasHiddenReal(t *testing.T) {
	// The API call failed before it streamed: Claude Code wrote its own
	// message ("model":"<synthetic>", "API Error: 400 ...") as a whole
	// text block, and nothing else. No model streamed it: nothing to judge.
	exceptions := map[string]string{"claude/apiError": "false"}
	hidden := map[string]int{}
	for _, f := range realRecordings(t) {
		format := filepath.Base(filepath.Dir(f))
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		c, _ := agents.Lookup(format)
		want := c.HidesDeltas() != "" && recordedAssistantText(t, f, format)
		if w, ok := exceptions[format+"/"+name]; ok {
			want = w == "true"
		}
		if want {
			hidden[format]++
		}
		sc, err := scriptedmodel.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, as := range []string{format, FormatAuto} {
			r := replayWith(t, f, as, scenarioGuards(t, sc))
			if r.DeltasHidden != want { // (auto cannot tell opencode/apiError's one error line: it judges nothing either)
				t.Errorf("%s/%s as %s: deltasHidden %v, want %v", format, name, as, r.DeltasHidden, want)
			}
		}
	}
	if hidden[FormatCodex] < 3 || hidden[FormatOpencode] < 3 {
		t.Errorf("only %v recordings hide their deltas: the test judges too few", hidden)
	}
}

// recordedAssistantText reads a codex or opencode recording with
// encoding/json (a check independent of the scanner): whether it carries
// an assistant text or thinking item or part with text (whitespace too, not empty).
func recordedAssistantText(t *testing.T, file, format string) bool {
	t.Helper()
	for _, line := range recordedLines(t, file) {
		var m struct {
			Type string
			Item struct{ Type, Text string }
			Part struct{ Text string }
		}
		if json.Unmarshal(line, &m) != nil {
			continue // a last line cut where the CLI was stopped
		}
		var text string
		switch {
		case format == FormatCodex && m.Type == "item.completed" &&
			(m.Item.Type == "agent_message" || m.Item.Type == "reasoning"):
			text = m.Item.Text
		case format == FormatOpencode && (m.Type == "text" || m.Type == "reasoning"):
			text = m.Part.Text
		}
		if text != "" {
			return true
		}
	}
	return false
}

// withoutStreamEvents is a claude recording as Claude Code prints it
// without --include-partial-messages: its stream_event lines left out.
func withoutStreamEvents(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasPrefix(l, `{"type":"stream_event"`) {
			out = append(out, l)
		}
	}
	if len(out) == strings.Count(string(data), "\n")+1 && strings.Contains(string(data), `"stream_event"`) {
		t.Fatalf("%s: no stream_event line left out", file)
	}
	return []byte(strings.Join(out, ""))
}

// TestDeltasHiddenClaudeWithoutPartialMessages: the real claude
// recordings with their stream_event lines left out, as claude prints
// them without --include-partial-messages, hide their deltas when the main
// agent wrote text; the tool-only ones carry nothing to judge. The
// verdicts do not change.
func TestDeltasHiddenClaudeWithoutPartialMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"healthy", true},
		{"silentRun", true},    // the final answer after sixteen tool-only messages
		{"lengthStop", true},   // the first of the answers cut at max_tokens
		{"subagentLoop", true}, // the main agent's answer; the subagent's loop trips while it is open
		{"apiError", false},    // Claude Code's own "<synthetic>" error text: no model streamed it
		{"cycle", false},       // tool-only messages
		{"identicalLoop", false},
		{"overspend", false},
		{"repeatedErrors", false},
		{"stall", false}, // no assistant line
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join("testdata/real/claude", c.name+".jsonl")
			sc, err := scriptedmodel.Lookup(c.name)
			if err != nil {
				t.Fatal(err)
			}
			g := scenarioGuards(t, sc)
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			with := replayOpts(t, data, Options{Format: FormatClaude, Guards: g})
			r := replayOpts(t, withoutStreamEvents(t, f), Options{Format: FormatClaude, Guards: g})
			if r.DeltasHidden != c.want {
				t.Errorf("deltasHidden %v, want %v", r.DeltasHidden, c.want)
			}
			if with.DeltasHidden {
				t.Errorf("with its stream_event lines: deltasHidden %v", with.DeltasHidden)
			}
			if len(r.Trips) != len(with.Trips) || r.Result != with.Result || r.Unparsed != with.Unparsed {
				t.Errorf("the verdict changed: %s, want %s", js(r), js(with))
			}
		})
	}
}

// TestDeltasHiddenRule: the rule on small streams. The main agent's first
// message with text or thinking (whitespace too, not empty) decides, when it completes: it
// hides the deltas if no delta came before it (in any agent) nor in it.
// Subagent messages do not decide; once decided, nothing changes it.
func TestDeltasHiddenRule(t *testing.T) {
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	thinking := func(s string) []any {
		return []any{map[string]any{"type": "thinking", "thinking": s, "signature": "x"}}
	}
	tool := func(id string) []any {
		return []any{map[string]any{"type": "tool_use", "id": id, "name": "Task", "input": map[string]any{"prompt": "p"}}}
	}
	codexMsg := func(typ, s string) string {
		return js(map[string]any{"type": "item.completed", "item": map[string]any{"id": "i1", "type": typ, "text": s}})
	}
	codexCmd := `{"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"ls","aggregated_output":"","status":"completed"}}`
	gWhole := `{"type":"message","role":"assistant","content":"Done.","delta":false}`
	var pi, piD stream
	pi.add(`{"type":"agent_start"}`)
	pi.piSpeak("All done.")
	pi.add(`{"type":"agent_end","messages":[]}`)
	piD.add(`{"type":"agent_start"}`)
	piD.piDelta("text", "All done.", 0)
	piD.piSpeak("All done.")
	var loop stream
	loop.add(cInit())
	for range 6 {
		loop.claudeToolOnly("Bash", map[string]any{"command": "ls"}, false)
	}
	loop.claudeSpeak("too late")

	tests := []struct {
		name, format string
		lines        []string
		want         bool
	}{
		{"claude whole text", FormatClaude, []string{cInit(), cAssistant("m1", text("hi"), "end_turn"), cResult(0.01)}, true},
		{"claude whole thinking, the message left open at the end", FormatClaude, []string{cInit(), cAssistant("m1", thinking("hmm"), nil)}, true},
		{"claude deltas, then the assistant line", FormatClaude, []string{cInit(), cStart("", "m1"), cTextDelta("", "hi"),
			cAssistant2("", "m1", text("hi"), nil), cMessageDelta("", "end_turn"), cResultStop("end_turn")}, false},
		{"claude deltas, later a whole message", FormatClaude, []string{cInit(), cStart("", "m1"), cTextDelta("", "hi"),
			cAssistant2("", "m1", text("hi"), nil), cAssistant2("", "m2", text("API Error: boom"), "stop_sequence"), cResult(0)}, false},
		{"claude an empty delta is a delta", FormatClaude, []string{cInit(), cStart("", "m1"), cTextDelta("", ""),
			cAssistant2("", "m1", text("hi"), nil), cResult(0)}, false},
		{"claude empty thinking, then text deltas", FormatClaude, []string{cInit(), cStart("", "m1"),
			cAssistant2("", "m1", thinking(""), nil), cTextDelta("", "hi"), cAssistant2("", "m1", text("hi"), nil), cResult(0)}, false},
		{"claude subagent whole text, then main deltas", FormatClaude, []string{cInit(), cAssistant2("", "m1", tool("toolu_1"), "tool_use"),
			cAssistant2("toolu_1", "s1", text("sub says"), "end_turn"), cStart("", "m2"), cTextDelta("", "hi"),
			cAssistant2("", "m2", text("hi"), nil), cResult(0)}, false},
		{"claude subagent whole text only", FormatClaude, []string{cInit(), cAssistant2("", "m1", tool("toolu_1"), "tool_use"),
			cAssistant2("toolu_1", "s1", text("sub says"), "end_turn"), cToolResult("toolu_1", false), cResult(0)}, false},
		{"claude subagent whole text, then main whole text", FormatClaude, []string{cInit(), cAssistant2("", "m1", tool("toolu_1"), "tool_use"),
			cAssistant2("toolu_1", "s1", text("sub says"), "end_turn"), cToolResult("toolu_1", false),
			cAssistant2("", "m2", text("done"), "end_turn"), cResult(0)}, true},
		{"claude tool-only", FormatClaude, []string{cInit(), cAssistant2("", "m1", tool("toolu_1"), "tool_use"), cToolResult("toolu_1", false), cResult(0)}, false},
		{"claude text after a trip is not judged", FormatClaude, loop.lines, false},
		{"codex agent message", FormatCodex, []string{`{"type":"turn.started"}`, codexMsg("agent_message", "hi")}, true},
		{"codex reasoning", FormatCodex, []string{`{"type":"turn.started"}`, codexMsg("reasoning", "thinking it over")}, true},
		// A whitespace answer printed whole is the very stream degeneration cannot see.
		{"codex whitespace only", FormatCodex, []string{`{"type":"turn.started"}`, codexMsg("agent_message", " \n\t")}, true},
		{"codex tool-only", FormatCodex, []string{`{"type":"turn.started"}`, codexCmd}, false},
		{"codex reopened turn keeps it", FormatCodex, sessionStreams("a", "b")[FormatCodex], true},
		{"opencode text part", FormatOpencode, sessionStreams("a", "b")[FormatOpencode], true},
		{"gemini deltas", FormatGemini, sessionStreams("a", "b")[FormatGemini], false},
		{"gemini whole message, then deltas of the same message", FormatGemini, []string{gInit, gUser, gWhole, gSpeak, gResult}, false},
		{"gemini whole message, deltas only later", FormatGemini, []string{gInit, gUser, gWhole, gUser, gSpeak, gResult}, true},
		{"pi message without deltas", FormatPi, pi.lines, true},
		{"pi deltas", FormatPi, piD.lines, false},
		{"no assistant text", FormatPi, sessionStreams("a", "b")[FormatPi], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if r.DeltasHidden != tt.want || r.Unparsed != 0 {
				t.Errorf("deltasHidden %v unparsed %d, want %v and 0", r.DeltasHidden, r.Unparsed, tt.want)
			}
		})
	}
}

// TestDeltasHiddenCheckpoint: what the stream showed survives a
// checkpoint: hidden set before it stays set; a delta seen before it still
// keeps a later whole message from setting it; a message that carried
// whole text when the checkpoint was taken still decides when it ends.
func TestDeltasHiddenCheckpoint(t *testing.T) {
	tests := []struct {
		name, format  string
		before, after []string
		atCut, want   bool
	}{
		{"hidden kept", FormatCodex, []string{`{"type":"thread.started","thread_id":"t"}`, `{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}`},
			[]string{`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}`,
				`{"type":"turn.started"}`, `{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":0,"output_tokens":5}}`},
			true, true},
		{"a delta seen is kept", FormatClaude, []string{cInit(), cStart("", "m1"), cTextDelta("", "hi"),
			cAssistant2("", "m1", []any{piText("hi")}, nil)},
			[]string{cAssistant2("", "m2", []any{piText("API Error: boom")}, "stop_sequence"), cResult(0)},
			false, false},
		{"an open message's whole text is kept", FormatClaude, []string{cInit(), cAssistant("m1", []any{piText("hi")}, nil)},
			[]string{cResult(0.01)}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := New(Options{Format: tt.format})
			for _, l := range tt.before {
				a.Feed([]byte(l), time.Time{})
			}
			cp, err := a.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(Options{Format: tt.format})
			if err := b.Restore(cp); err != nil {
				t.Fatal(err)
			}
			if got := b.Report().DeltasHidden; got != tt.atCut || got != a.Report().DeltasHidden {
				t.Errorf("restored: deltasHidden %v, want %v", got, tt.atCut)
			}
			for _, l := range tt.after {
				b.Feed([]byte(l), time.Time{})
			}
			b.Finish()
			if got := b.Report().DeltasHidden; got != tt.want {
				t.Errorf("after the rest: deltasHidden %v, want %v", got, tt.want)
			}
			if whole := replayLines(t, tt.format, DefaultGuards(), append(append([]string{}, tt.before...), tt.after...)); whole.DeltasHidden != tt.want {
				t.Errorf("uninterrupted: deltasHidden %v, want %v", whole.DeltasHidden, tt.want)
			}
		})
	}
}

// TestDeltasHiddenEveryCut: every real recording, and the claude ones
// without their stream_event lines, restored from a checkpoint after any
// line and fed the rest, reach the uninterrupted run's DeltasHidden.
func TestDeltasHiddenEveryCut(t *testing.T) {
	type rec struct {
		name, format string
		data         []byte
	}
	var recs []rec
	for _, f := range realRecordings(t) {
		format := filepath.Base(filepath.Dir(f))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec{f, format, data})
		if format == FormatClaude {
			recs = append(recs, rec{f + " without stream_event", format, withoutStreamEvents(t, f)})
		}
	}
	for _, r := range recs {
		lines := strings.Split(strings.TrimRight(string(r.data), "\n"), "\n")
		opts := Options{Format: r.format}
		want := feedReport(t, opts, nil, lines).DeltasHidden
		for cut := 0; cut <= len(lines); cut++ {
			first, _ := New(opts)
			for _, l := range lines[:cut] {
				first.Feed([]byte(l), time.Time{})
			}
			cp, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if got := feedReport(t, opts, cp, lines[cut:]).DeltasHidden; got != want {
				t.Errorf("%s cut at %d: deltasHidden %v, want %v", r.name, cut, got, want)
			}
		}
	}
}

// Judging the deltas allocates nothing: whole text lines before the
// stream decided and after, and delta lines.
func TestDeltasHiddenZeroAllocs(t *testing.T) {
	for _, c := range []struct {
		name, format string
		lines        []string
		repeat       string
	}{
		{"codex undecided", FormatCodex, []string{`{"type":"turn.started"}`},
			`{"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"ls","aggregated_output":"","status":"completed"}}`},
		{"codex hidden", FormatCodex, []string{`{"type":"turn.started"}`},
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi there"}}`},
		{"claude whole text", FormatClaude, []string{cInit()}, cAssistant("m1", []any{piText("hi there")}, nil)},
		{"claude deltas", FormatClaude, []string{cInit(), cStart("", "m1")}, cTextDelta("", "hi there")},
	} {
		e, _ := New(Options{Format: c.format, Guards: guards(func(g *Guards) { g.StepBudget = 0 })})
		for _, l := range c.lines {
			e.Feed([]byte(l), time.Time{})
		}
		line := []byte(c.repeat)
		e.Feed(line, time.Time{})
		if a := testing.AllocsPerRun(100, func() { e.Feed(line, time.Time{}) }); a != 0 {
			t.Errorf("%s: %v allocations per line", c.name, a)
		}
	}
}

func TestDeltasHiddenText(t *testing.T) {
	const blind = "the stream shows no deltas: degeneration, repetition and a stall inside a message cannot be seen"
	for _, c := range []struct{ format, fix, msg string }{
		{FormatClaude, "run claude with --include-partial-messages", blind + "; fix: run claude with --include-partial-messages"},
		{FormatCodex, "none: codex exec --json prints whole messages", blind + "; fix: none: codex exec --json prints whole messages"},
		{FormatOpencode, "none: opencode run --format json prints whole text parts",
			blind + "; fix: none: opencode run --format json prints whole text parts"},
		{FormatGemini, "", blind},
		{FormatPi, "", blind},
		{FormatAuto, "", blind},
		{"", "", blind},
	} {
		if got := DeltasHiddenFix(c.format); got != c.fix {
			t.Errorf("DeltasHiddenFix(%q) = %q, want %q", c.format, got, c.fix)
		}
		if got := DeltasHiddenMessage(c.format); got != c.msg {
			t.Errorf("DeltasHiddenMessage(%q) = %q, want %q", c.format, got, c.msg)
		}
	}
	want := []string{DetectorDegeneration, DetectorRepetition, DetectorStall}
	if strings.Join(BlindDetectors, ",") != strings.Join(want, ",") {
		t.Errorf("BlindDetectors %v, want %v", BlindDetectors, want)
	}
	for _, d := range BlindDetectors {
		if ClassOf(d) == "" {
			t.Errorf("blind detector %q is not a detector", d)
		}
	}
	for _, c := range []struct {
		r    Report
		want bool
	}{{Report{DeltasHidden: true}, true}, {Report{}, false}} {
		if got := strings.Contains(js(c.r), `"deltasHidden":true`); got != c.want || !c.want && strings.Contains(js(c.r), "deltasHidden") {
			t.Errorf("report JSON %s: deltasHidden shown %v, want %v (omitted when false)", js(c.r), got, c.want)
		}
	}
}
