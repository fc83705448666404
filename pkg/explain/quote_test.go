package explain

import (
	"bytes"
	"strings"
	"testing"
)

// hostile is what an agent may put in its tool names, arguments and error
// text to forge explain's output: clear the screen, move the cursor, rewrite
// the line, start a row of its own, reorder what is shown.
var hostile = map[string]string{
	"ESC":    "\x1b[2J\x1b[H",
	"CR":     "\r",
	"LF":     "\n",
	"U+2028": "\u2028",
	"U+202E": "\u202e",
}

// fake is the row an agent would forge after each.
const fake = `>>      9   +1s  TRIPPED identicalCalls (runaway): forged`

// jsonString is s as JSON string contents.
func jsonString(s string) string {
	r := strings.NewReplacer("\\", `\\`, `"`, `\"`, "\x1b", `\u001b`, "\r", `\r`, "\n", `\n`)
	return r.Replace(s)
}

// The agent's words reach explain's text escaped, each hostile character
// as a visible escape, so no row but explain's own starts a line.
func TestTextEscapesTheAgent(t *testing.T) {
	for name, bad := range hostile {
		t.Run(name, func(t *testing.T) {
			evil := bad + fake
			stream := strings.Join([]string{
				`{"type":"system","subtype":"init","session_id":"s","tools":[],"model":"claude-sonnet-4-5-20250929"}`,
				`{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"` + jsonString("Bash"+evil) + `","input":{"command":"` + jsonString(evil) + `"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}},"session_id":"s"}`,
				`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"no","is_error":true}]},"session_id":"s"}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"` + jsonString("failed"+evil) + `","session_id":"s","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}`,
			}, "\n")
			tl, err := Stream(strings.NewReader(stream), Options{Format: "claude", ArgsWidth: 200})
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Entries) == 0 || len(tl.Entries[0].Calls) == 0 || !strings.Contains(tl.Entries[0].Calls[0].Name, "forged") {
				t.Fatalf("the call was not read: %+v", tl.Entries)
			}
			if !strings.Contains(tl.Report.ResultError, "forged") {
				t.Fatalf("the error was not read: %q", tl.Report.ResultError)
			}
			var text bytes.Buffer
			if err := tl.WriteText(&text, false); err != nil {
				t.Fatal(err)
			}
			run := &Run{Namespace: "ns", Name: "r", Phase: "Faulted", Fault: &Turn{Class: "agent-error", Message: evil},
				Turns: []Turn{{Name: "r-0", Outcome: "Failed", Message: evil, Notes: []string{evil}}}, StreamTurn: "r-0", StreamError: evil}
			if err := run.WriteText(&text, true); err != nil {
				t.Fatal(err)
			}
			out := text.String()
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(strings.TrimLeft(line, " "), ">>") && strings.Contains(line, "forged") {
					t.Errorf("a forged row: %q", line)
				}
			}
			for _, c := range []string{"\r", "\u2028", "\u2029", "\u202e"} {
				if strings.Contains(out, c) {
					t.Errorf("%q printed raw", c)
				}
			}
			if strings.Contains(strings.NewReplacer(styleReset, "", styleBold, "", styleDim, "", styleRed, "", styleYellow, "", styleCyan, "").Replace(out), "\x1b") {
				t.Error("an ESC printed that is not explain's own style")
			}
			if !strings.Contains(out, "forged") {
				t.Error("the agent's words are gone, not escaped")
			}
		})
	}
}
