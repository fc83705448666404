package monitor

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CLI's own session id of each real recording's healthy stream (read
// out of the files: claude system/init session_id, codex thread.started
// thread_id, opencode sessionID, gemini init session_id, pi session id),
// with the format named and with auto.
func TestAgentSessionIDRealHealthy(t *testing.T) {
	for _, c := range []struct{ format, id string }{
		{FormatClaude, "94a8fab0-fe65-44c2-ae67-96419ec2dc6a"},
		{FormatCodex, "01a236f4-95cc-7a81-a9d0-8dde58c9c3cf"},
		{FormatOpencode, "ses_dc90a58e0ffeyB1z3uhtU1h62R"},
		{FormatGemini, "0a7c2e62-1c44-442f-873d-ac3997c6b99d"},
		{FormatPi, "01a236f4-06b0-741d-9767-91cfe154c44b"},
	} {
		for _, format := range []string{c.format, FormatAuto} {
			t.Run(c.format+"/"+format, func(t *testing.T) {
				r := replayWith(t, filepath.Join("testdata/real", c.format, "healthy.jsonl"), format, DefaultGuards())
				if r.AgentSessionID != c.id {
					t.Errorf("agentSessionID %q, want %q", r.AgentSessionID, c.id)
				}
				if r.Format != c.format || r.Unparsed != 0 {
					t.Errorf("format %q unparsed %d, want %q and 0", r.Format, r.Unparsed, c.format)
				}
			})
		}
	}
}

// Every real recording yields the id its first named line carries, as
// encoding/json reads it (a check independent of the scanner).
func TestAgentSessionIDRealAll(t *testing.T) {
	for _, f := range realRecordings(t) {
		format := filepath.Base(filepath.Dir(f))
		want := firstSessionID(t, f, format)
		if want == "" {
			t.Errorf("%s: no session id in the recording", f)
		}
		if r := replayWith(t, f, format, DefaultGuards()); r.AgentSessionID != want {
			t.Errorf("%s: agentSessionID %q, want %q", f, r.AgentSessionID, want)
		}
	}
}

func firstSessionID(t *testing.T, file, format string) string {
	t.Helper()
	for _, line := range recordedLines(t, file) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		var id any
		switch typ := m["type"]; format {
		case FormatClaude:
			if typ == "system" && m["subtype"] == "init" {
				id = m["session_id"]
			}
		case FormatCodex:
			if typ == "thread.started" {
				id = m["thread_id"]
			}
		case FormatOpencode:
			id = m["sessionID"]
		case FormatGemini:
			if typ == "init" {
				id = m["session_id"]
			}
		case FormatPi:
			if typ == "session" {
				id = m["id"]
			}
		}
		if s, ok := id.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func ocLine(typ, session string, part map[string]any) string {
	m := map[string]any{"type": typ, "timestamp": 1796218400953, "part": part}
	if session != "" {
		m["sessionID"] = session
	}
	return js(m)
}

func cInitID(id string) string {
	return js(map[string]any{"type": "system", "subtype": "init", "session_id": id, "model": "claude-sonnet-4-5-20250929", "tools": []string{"Bash"}})
}

// sessionStreams are two turns of each format in one stream, each turn
// naming its own id (a reopened turn): the first id stands.
func sessionStreams(a, b string) map[string][]string {
	return map[string][]string{
		FormatClaude: {cInitID(a), cAssistant("m1", []any{piText("hi")}, "end_turn"), cResult(0.01),
			cInitID(b), cAssistant("m2", []any{piText("again")}, "end_turn"), cResult(0.01)},
		FormatCodex: {`{"type":"thread.started","thread_id":"` + a + `"}`, `{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}`,
			`{"type":"thread.started","thread_id":"` + b + `"}`, `{"type":"turn.started"}`,
			`{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":0,"output_tokens":5}}`},
		FormatOpencode: {ocLine("step_start", a, map[string]any{"type": "step-start", "sessionID": a}),
			ocLine("text", a, map[string]any{"type": "text", "text": "hi", "sessionID": a}),
			ocLine("step_finish", a, map[string]any{"type": "step-finish", "reason": "stop", "cost": 0.01, "sessionID": a}),
			ocLine("step_start", b, map[string]any{"type": "step-start", "sessionID": b}),
			ocLine("step_finish", b, map[string]any{"type": "step-finish", "reason": "stop", "cost": 0.01, "sessionID": b})},
		FormatGemini: {`{"type":"init","timestamp":"2026-12-02T13:32:33.576Z","session_id":"` + a + `","model":"gemini-2.5-flash"}`,
			`{"type":"message","role":"assistant","content":"hi","delta":true}`,
			`{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":5}}`,
			`{"type":"init","timestamp":"2026-12-02T13:32:34.576Z","session_id":"` + b + `","model":"gemini-2.5-flash"}`,
			`{"type":"result","status":"success","stats":{"input_tokens":20,"output_tokens":5}}`},
		FormatPi: {`{"type":"session","version":3,"id":"` + a + `","timestamp":"2026-12-02T13:31:31.889Z","cwd":"/w"}`,
			`{"type":"agent_start"}`, `{"type":"agent_end","messages":[]}`,
			`{"type":"session","version":3,"id":"` + b + `","timestamp":"2026-12-02T13:31:32.889Z","cwd":"/w"}`,
			`{"type":"agent_start"}`, `{"type":"agent_end","messages":[]}`},
	}
}

// The first id the stream names wins: a reopened turn, a second header,
// never change it; with auto too.
func TestAgentSessionIDFirstWins(t *testing.T) {
	for format, lines := range sessionStreams("first-id", "second-id") {
		for _, f := range []string{format, FormatAuto} {
			r := replayLines(t, f, DefaultGuards(), lines)
			if r.AgentSessionID != "first-id" || r.Unparsed != 0 || r.Format != format {
				t.Errorf("%s/%s: agentSessionID %q unparsed %d format %q, want first-id, 0, %s",
					format, f, r.AgentSessionID, r.Unparsed, r.Format, format)
			}
		}
	}
}

// An id over 256 bytes is ignored (the next one that fits is kept); one of
// 256 bytes is kept; an empty one is not an id.
func TestAgentSessionIDBounded(t *testing.T) {
	long, edge := strings.Repeat("x", maxAgentSessionID+1), strings.Repeat("y", maxAgentSessionID)
	for format := range sessionStreams("", "") {
		for _, c := range []struct{ a, b, want string }{
			{long, "fits", "fits"},
			{long, long, ""},
			{edge, "fits", edge},
			{"", "fits", "fits"},
		} {
			r := replayLines(t, format, DefaultGuards(), sessionStreams(c.a, c.b)[format])
			if r.AgentSessionID != c.want || r.Unparsed != 0 {
				t.Errorf("%s (%d, %d bytes): agentSessionID of %d bytes, unparsed %d; want %d bytes",
					format, len(c.a), len(c.b), len(r.AgentSessionID), r.Unparsed, len(c.want))
			}
		}
	}
}

// A key like the id's on a line that is not the id's is not read: claude's
// session_id is on every line but the id is init's; codex's, gemini's and
// pi's only on their named line; opencode's only at the top level, not the
// part's. A value that is not a string is no id and the line still parses.
func TestAgentSessionIDOnlyItsLine(t *testing.T) {
	for _, c := range []struct {
		name, format string
		lines        []string
		want         string
	}{
		{"claude assistant before init", FormatClaude, []string{
			`{"type":"assistant","session_id":"not-yet","message":{"id":"m0","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}}`,
			cInitID("init-id"), cResult(0.01)}, "init-id"},
		{"claude no init", FormatClaude, []string{
			`{"type":"assistant","session_id":"not-init","message":{"id":"m0","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}}`,
			`{"type":"system","subtype":"task_started","session_id":"not-init-either"}`, cResult(0.01)}, ""},
		{"codex other line", FormatCodex, []string{
			`{"type":"turn.started","thread_id":"not-it"}`, `{"type":"thread.started","thread_id":"it"}`}, "it"},
		{"gemini other line", FormatGemini, []string{
			`{"type":"message","role":"user","content":"hi","session_id":"not-it"}`,
			`{"type":"init","session_id":"it","model":"gemini-2.5-flash"}`}, "it"},
		{"pi other line", FormatPi, []string{
			`{"type":"agent_start","id":"not-it"}`,
			`{"type":"message_start","message":{"role":"assistant","content":[],"id":"nor-this"}}`,
			`{"type":"session","version":3,"id":"it"}`}, "it"},
		{"opencode part only", FormatOpencode, []string{
			ocLine("step_start", "", map[string]any{"type": "step-start", "sessionID": "part-only"}),
			ocLine("text", "top", map[string]any{"type": "text", "text": "hi", "sessionID": "part"})}, "top"},
		{"opencode after part", FormatOpencode, []string{
			`{"type":"step_start","part":{"type":"step-start","sessionID":"p"},"sessionID":"after"}`}, "after"},
		{"opencode error", FormatOpencode, []string{
			`{"type":"error","sessionID":"on-error","error":{"name":"APIError","data":{"message":"boom"}}}`}, "on-error"},
		{"not a string", FormatCodex, []string{
			`{"type":"thread.started","thread_id":42}`, `{"type":"thread.started","thread_id":"it"}`}, "it"},
		{"escaped", FormatGemini, []string{`{"type":"init","session_id":"a\u0062c\/d","model":"m"}`}, "abc/d"},
		{"escaped key", FormatGemini, []string{`{"type":"init","session\u005fid":"k","model":"m"}`}, "k"},
	} {
		r := replayLines(t, c.format, DefaultGuards(), c.lines)
		if r.AgentSessionID != c.want || r.Unparsed != 0 {
			t.Errorf("%s: agentSessionID %q unparsed %d, want %q and 0", c.name, r.AgentSessionID, r.Unparsed, c.want)
		}
	}
}

// The id is read after a stopping trip too (it is no verdict).
func TestAgentSessionIDAfterTrip(t *testing.T) {
	var s stream
	for range 6 {
		s.claudeToolOnly("Bash", map[string]any{"command": "ls"}, false)
	}
	s.add(cInitID("late-id"))
	r := replayLines(t, FormatClaude, DefaultGuards(), s.lines)
	if len(r.Trips) == 0 || r.Trips[0].Line >= len(s.lines) {
		t.Fatalf("want a trip before the init line: %+v", r.Trips)
	}
	if r.AgentSessionID != "late-id" {
		t.Errorf("agentSessionID %q, want late-id", r.AgentSessionID)
	}
}

// A restored checkpoint keeps the id: a later line does not replace it.
func TestAgentSessionIDCheckpoint(t *testing.T) {
	for format, lines := range sessionStreams("first-id", "second-id") {
		a, _ := New(Options{Format: format})
		a.Feed([]byte(lines[0]), time.Time{})
		cp, err := a.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(Options{Format: format})
		if err := b.Restore(cp); err != nil {
			t.Fatal(err)
		}
		if got := b.Report().AgentSessionID; got != "first-id" {
			t.Errorf("%s: restored agentSessionID %q", format, got)
		}
		for _, l := range lines[1:] {
			b.Feed([]byte(l), time.Time{})
		}
		if got := b.Report().AgentSessionID; got != "first-id" {
			t.Errorf("%s: agentSessionID %q after the rest, want first-id", format, got)
		}
	}
}

// The id is copied once: lines naming an id after it is kept allocate
// nothing, nor do lines naming none (before it is kept).
func TestAgentSessionIDZeroAllocs(t *testing.T) {
	for format, lines := range sessionStreams("first-id", "second-id") {
		e, _ := New(Options{Format: format})
		for _, l := range lines {
			e.Feed([]byte(l), time.Time{})
		}
		later := []byte(lines[len(lines)-2]) // a line of the second turn
		if a := testing.AllocsPerRun(100, func() { e.Feed(later, time.Time{}) }); a != 0 {
			t.Errorf("%s: %v allocations per line after the id is kept", format, a)
		}
		if e.Report().AgentSessionID != "first-id" {
			t.Errorf("%s: agentSessionID %q", format, e.Report().AgentSessionID)
		}
	}
	e, _ := New(Options{Format: FormatCodex})
	long := []byte(`{"type":"thread.started","thread_id":"` + strings.Repeat("x", 300) + `"}`)
	if a := testing.AllocsPerRun(100, func() { e.Feed(long, time.Time{}) }); a != 0 {
		t.Errorf("%v allocations per line naming an over-long id", a)
	}
}
