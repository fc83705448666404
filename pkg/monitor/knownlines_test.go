package monitor

import "testing"

// gemini lines, as Gemini CLI's stream-json prints them.
const (
	gInit    = `{"type":"init","timestamp":"2026-12-02T13:12:29.400Z","session_id":"s","model":"gemini-2.5-flash"}`
	gUser    = `{"type":"message","role":"user","content":"do it"}`
	gSpeak   = `{"type":"message","role":"assistant","content":"Done.","delta":true}`
	gResult  = `{"type":"result","status":"success","stats":{"input_tokens":0,"output_tokens":0}}`
	gLoop    = `{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}`
	gBlocked = `{"type":"error","severity":"warning","message":"Agent execution blocked: a hook said no"}`
)

// TestKnownLinesIgnored: the later additions to the known lines that carry
// nothing (docs/design.md#known-lines-that-carry-nothing) are counted in
// ignored, not in unparsed, and the verdicts do not change. Every claude
// system subtype but init is one; pi 0.7x's compaction_* and queue_update
// sit beside the older auto_compaction_* and auto_retry_*; a gemini error
// notice that the turn goes on after is one too.
func TestKnownLinesIgnored(t *testing.T) {
	sys := func(subtype string) string {
		return js(map[string]any{"type": "system", "subtype": subtype, "session_id": "s", "uuid": "u"})
	}
	pi := func(typ string) string { return js(map[string]any{"type": typ}) }
	var ps stream
	ps.add(`{"type":"agent_start"}`, pi("compaction_start"), pi("queue_update"))
	ps.piSpeak("hello")
	ps.add(pi("compaction_end"), pi("auto_compaction_start"), pi("auto_compaction_end"),
		pi("auto_retry_start"), pi("auto_retry_end"), `{"type":"agent_end"}`)
	tests := []struct {
		name, format string
		lines        []string
		ignored      int
	}{
		{"claude system subtypes", FormatClaude, []string{cInit(), sys("status"), sys("thinking_tokens"), sys("api_retry"),
			sys("compact_boundary"), sys("permission_denied"), sys("hook_started"), sys("hook_response"),
			sys("task_started"), sys("task_progress"), sys("task_notification"), sys("some_future_notice"),
			cAssistant("m1", []any{map[string]any{"type": "text", "text": "hi"}}, "end_turn"), cResult(0.01)}, 11},
		{"pi compaction and queue notices", FormatPi, ps.lines, 7},
		{"gemini notice the turn goes on after", FormatGemini, []string{gInit, gUser, gBlocked, gSpeak, gResult}, 1},
	}
	for _, tt := range tests {
		for _, f := range []string{tt.format, FormatAuto} {
			t.Run(tt.name+"/"+f, func(t *testing.T) {
				r := replayLines(t, f, DefaultGuards(), tt.lines)
				if r.Format != tt.format || r.Ignored != tt.ignored || r.Unparsed != 0 {
					t.Errorf("format %s ignored %d unparsed %d, want %s %d 0", r.Format, r.Ignored, r.Unparsed, tt.format, tt.ignored)
				}
				if !r.Result || r.ResultError != "" || len(r.Trips) != 0 {
					t.Errorf("result %v resultError %q trips %v: the notices changed the verdict", r.Result, r.ResultError, r.Trips)
				}
			})
		}
	}
}

// TestPiNoticeSniffed: auto recognises pi from its 0.7x notices alone, as
// from the older ones (a stream may start with one).
func TestPiNoticeSniffed(t *testing.T) {
	for _, typ := range []string{"compaction_start", "compaction_end", "queue_update", "auto_compaction_start"} {
		if got := sniff([]byte(`{"type":"` + typ + `"}`)); got != FormatPi {
			t.Errorf("%s sniffed as %q", typ, got)
		}
	}
}
