package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixtureReports are the reports of the streams in testdata/fixtures:
// shapes that real CLIs print and that the corpus lacks (SOURCES.md there
// says where each shape comes from). Each is replayed with its format and
// with auto.
var fixtureReports = []struct {
	file, format string
	want         Report
}{
	// DeltasHidden: these shapes carry whole text blocks and no deltas, so
	// each stream that has assistant text hides its deltas (Report.DeltasHidden).
	//
	// The session header is pi's first line: auto recognises it, and it is
	// ignored. 0.001525 + 0.00132.
	{"pi_session_header.jsonl", FormatPi, Report{DeltasHidden: true, AgentSessionID: "0b6a4d52-3f0e-4c1a-9d55-2b8f1e7c9a10", Lines: 9, Steps: 1, CostUSD: "0.002845", StopReason: StopEnd, Result: true, Ignored: 1}},
	// RPC mode: three command replies and one UI request, ignored.
	{"pi_rpc_mode.jsonl", FormatPi, Report{DeltasHidden: true, Lines: 10, Steps: 1, CostUSD: "0.00131", StopReason: StopEnd, Result: true, Ignored: 4}},
	// Claude Code 2.1.x: two rate_limit_event and three system task_* lines,
	// ignored; the result's total_cost_usd replaces the running estimate.
	{"claude_2.1_notices.jsonl", FormatClaude, Report{DeltasHidden: true, AgentSessionID: "s-21", Lines: 10, Steps: 1, CostUSD: "0.0089", StopReason: StopEnd, Result: true, Ignored: 5}},
	// A subagent's lines (parent_tool_use_id set): its call is a step too.
	{"claude_subagent.jsonl", FormatClaude, Report{DeltasHidden: true, AgentSessionID: "s-sub", Lines: 11, Steps: 2, CostUSD: "0.0125", StopReason: StopEnd, Result: true, Ignored: 2}},
	// codex's top-level error notice is ignored, and its text is the
	// failure's when turn.failed names none.
	{"codex_error_notice.jsonl", FormatCodex, Report{DeltasHidden: true, AgentSessionID: "0199a213-81c0-7800-8aa1-bbab2a035a53", Lines: 7, Steps: 1, CostUSD: "0.00", StopReason: StopError, Result: true, Ignored: 1,
		ResultError: "stream disconnected before completion: rate limit reached"}},
	// Older exec --json: session.created, item_type, assistant_message.
	// 1000 input + 1000 cached + 100 output tokens at gpt-5-codex rates.
	{"codex_older_shapes.jsonl", FormatCodex, Report{DeltasHidden: true, AgentSessionID: "0199a213-81c0-7800-8aa1-bbab2a035a53", Lines: 6, Steps: 1, CostUSD: "0.002375", Result: true}},
	// Gemini CLI 0.11 stats (input_tokens, no input/cached): 12000 input
	// and 100 output tokens at gemini-2.5-flash rates.
	{"gemini_0.11_stats.jsonl", FormatGemini, Report{AgentSessionID: "6c2d3e4f-0000-4000-8000-000000000011", Lines: 6, Steps: 1, CostUSD: "0.00385", Result: true}},
	// A second init reopens the turn: both runs' steps and cost count.
	{"gemini_two_runs.jsonl", FormatGemini, Report{AgentSessionID: "7d000000-0000-4000-8000-000000000001", Lines: 9, Steps: 2, CostUSD: "0.00165", Result: true}},
	// Gemini CLI's own loop guard: an error notice, then a success result.
	// The notice ended the turn: it is the failure, not an ignored line.
	// 400 input and 40 output tokens at gemini-2.5-flash rates.
	{"gemini_loop_guard.jsonl", FormatGemini, Report{AgentSessionID: "beb8cc6d-b562-4738-8857-7115a7c26372", Lines: 10, Steps: 3, CostUSD: "0.00022", StopReason: StopError, Result: true,
		ResultError: "Loop detected, stopping execution"}},
	// Three opencode runs appended to one log: a step_start after a final
	// step_finish reopens the turn.
	{"opencode_three_runs.jsonl", FormatOpencode, Report{DeltasHidden: true, AgentSessionID: "ses_1", Lines: 12, Steps: 3, CostUSD: "0.005", StopReason: StopEnd, Result: true}},
}

func TestFixtures(t *testing.T) {
	for _, tt := range fixtureReports {
		for _, f := range []string{tt.format, FormatAuto} {
			t.Run(tt.file+"/"+f, func(t *testing.T) {
				got := replayFile(t, filepath.Join("testdata/fixtures", tt.file), f)
				want := tt.want
				want.Format, want.Trips, want.Nudges = tt.format, []Trip{}, []Nudge{}
				if js(got) != js(want) {
					t.Errorf("report\n got %s\nwant %s", js(got), js(want))
				}
			})
		}
	}
}

// replayFile replays a stream file through the LineReader, without a clock.
func replayFile(t testing.TB, name, format string) Report {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return replayData(t, data, format)
}

func replayData(t testing.TB, data []byte, format string) Report {
	t.Helper()
	return replayOpts(t, data, Options{Format: format})
}

// replayOpts replays data through the LineReader with opts, without a clock.
func replayOpts(t testing.TB, data []byte, opts Options) Report {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	lr := NewLineReader(strings.NewReader(string(data)), 0)
	for {
		line, ok := lr.Next()
		if !ok {
			break
		}
		e.Feed(line, time.Time{})
	}
	e.Finish()
	return e.Report()
}
