package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorpus replays every recorded stream with its format and with auto:
// every line of a known shape parses (unparsed counts only the lines named
// in why), and the report is what the stream says.
func TestCorpus(t *testing.T) {
	tests := []struct {
		file string
		want Report
		why  string
	}{
		// DeltasHidden: no delta came before the main agent's first text
		// (Report.DeltasHidden): every codex and opencode stream that has
		// text, the claude ones printed without --include-partial-messages,
		// and the short pi runs, shaped without their deltas.
		// The second session's result is an error (is_error, a refused write).
		{"claude/takopi_claude_stream_json_session.jsonl", Report{DeltasHidden: true, AgentSessionID: "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", Lines: 9, Steps: 2, CostUSD: "0.013345", StopReason: StopEnd, Result: true,
			ResultError: "error_during_execution: Permission denied: cannot write to /root/secret.txt"}, ""},
		{"claude/gleam_golden_basic_query.ndjson", Report{DeltasHidden: true, AgentSessionID: "1d1e46f9-35c7-4834-b529-846d5bb82288", Lines: 3, Steps: 0, CostUSD: "0.1354875", StopReason: StopEnd, Result: true}, ""},
		// One message per line in file order: the last line is a system/init
		// that reopens the turn, so no result stands; the tool_use message's
		// stop_reason is null (the CLI streams blocks before the stop reason).
		{"claude/gleam_cli_2.1.4_messages.jsonl", Report{AgentSessionID: "40e7b02d-c0f9-4876-9010-f514d4eb0603", Lines: 4, Steps: 1, CostUSD: "0.24722425", StopReason: "", Result: false}, ""},
		// 1840 input (256 cached) + 732 output tokens at gpt-5-codex rates;
		// the second turn fails.
		{"codex/takopi_codex_exec_json_all_formats.jsonl", Report{DeltasHidden: true, AgentSessionID: "0199a213-81c0-7800-8aa1-bbab2a035a53", Lines: 23, Steps: 7, CostUSD: "0.009332", StopReason: StopError, Result: true,
			Ignored: 1, ResultError: "Aborted: required dependency `npm` is missing; cannot continue."}, "the top-level error notice is ignored"},
		{"codex/takopi_codex_exec_json_phase_and_unknown.jsonl", Report{DeltasHidden: true, AgentSessionID: "0199a213-81c0-7800-8aa1-bbab2a035a53", Lines: 8, Steps: 1, CostUSD: "0.0000625", Result: true, Unparsed: 1},
			"item type future_item is unknown"},
		{"opencode/takopi_opencode_run_json.jsonl", Report{DeltasHidden: true, AgentSessionID: "ses_1f2e3d4c5b6aAbCdEfGhIjKlMn", Lines: 5, Steps: 1, CostUSD: "0.0123", StopReason: StopEnd, Result: true}, ""},
		// A session error ends the run, failed.
		{"opencode/takopi_opencode_stream_error.jsonl", Report{AgentSessionID: "ses_error123", Lines: 2, Steps: 0, CostUSD: "0.00", StopReason: StopError, Result: true, ResultError: "Rate limit exceeded"}, ""},
		{"opencode/takopi_opencode_stream_success.jsonl", Report{DeltasHidden: true, AgentSessionID: "ses_494719016ffe85dkDMj0FPRbHK", Lines: 6, Steps: 1, CostUSD: "0.001", StopReason: StopEnd, Result: true}, ""},
		// A step_finish without a reason is not the final result event.
		{"opencode/takopi_opencode_stream_success_no_reason.jsonl", Report{DeltasHidden: true, AgentSessionID: "ses_no_reason", Lines: 3, CostUSD: "0.002", Result: false}, ""},
		// 0.001604 + 0.000936 + 0.00032 + 0.000602, exactly.
		{"pi/takopi_pi_print_mode_events.jsonl", Report{Lines: 50, Steps: 1, CostUSD: "0.003462", StopReason: StopEnd, Result: true, Ignored: 4},
			"auto_compaction_* and auto_retry_* notices are ignored"},
		{"pi/takopi_pi_stream_error.jsonl", Report{DeltasHidden: true, Lines: 3, CostUSD: "0.00", StopReason: StopError, Result: true, ResultError: "Upstream error"}, ""},
		{"pi/takopi_pi_stream_success.jsonl", Report{DeltasHidden: true, Lines: 8, Steps: 2, CostUSD: "0.00", StopReason: StopEnd, Result: true}, ""},
		// 1500 input + 1000 cached + 200 output tokens at gemini-2.5-pro
		// rates; the warning notice is ignored.
		{"gemini/fixture_stream_json_from_source.jsonl", Report{AgentSessionID: "5b1c2d3e-0000-4000-8000-000000000001", Lines: 11, Steps: 2, CostUSD: "0.004", Result: true, Ignored: 1}, ""},
	}
	for _, tt := range tests {
		format := strings.Split(tt.file, "/")[0]
		for _, f := range []string{format, FormatAuto} {
			t.Run(tt.file+"/"+f, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join("testdata/corpus", tt.file))
				if err != nil {
					t.Fatal(err)
				}
				got := replayData(t, data, f)
				want := tt.want
				want.Format, want.Trips, want.Nudges = format, []Trip{}, []Nudge{}
				if js(got) != js(want) {
					t.Errorf("report\n got %s\nwant %s", js(got), js(want))
				}
			})
		}
	}
}
