package monitor

import (
	"strings"
	"testing"
	"time"
)

// docs/design.md "Claude's cost": while a session runs its messages are
// priced from their tokens (claude-sonnet-4-5: $3 in, $15 out per MTok);
// the result's total_cost_usd replaces that running estimate for its
// session only, when it is not lower (docs/design.md#a-cost-never-goes-down:
// a lower one leaves the estimate and notes CostMismatch); a total that is
// not a non-negative number is ignored and the estimate stands; a later
// session starts from what the earlier ones cost.
func TestClaudeCostRule(t *testing.T) {
	asst := func(id string, in, out int) string {
		return `{"type":"assistant","message":{"id":"` + id + `","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_` + id +
			`","name":"Bash","input":{"command":"ls ` + id + `"}}],"stop_reason":"tool_use","usage":{"input_tokens":` + itoa(in) + `,"output_tokens":` + itoa(out) + `}}}`
	}
	result := func(cost string) string {
		return `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":` + cost + `}`
	}
	steps := []struct {
		line string
		cost string // State.Cost after the line
	}{
		{cInit(), "0.00"},
		{asst("m1", 1000, 100), "0.0045"}, // 0.003 + 0.0015, while the turn runs
		{asst("m2", 2000, 50), "0.01125"}, // + 0.006 + 0.00075
		{result("0.02"), "0.02"},          // the CLI's own total replaces the estimate
		{cInit(), "0.02"},                 // a new session keeps what the first cost
		{asst("m3", 1000, 100), "0.0245"}, // its own estimate on top
		{result("0.001"), "0.0245"},       // a lower total does not lower the estimate: noted
		{cInit(), "0.0245"},               //
		{asst("m4", 1000, 100), "0.029"},  //
		{result("-1"), "0.029"},           // negative: ignored, the estimate stands
		{cInit(), "0.029"},                //
		{asst("m5", 1000, 100), "0.0335"}, //
		{result(`"5"`), "0.0335"},         // a string: ignored
		{cInit(), "0.0335"},               //
		{asst("m6", 1000, 100), "0.038"},  //
		{result("NaN"), "0.038"},          // Python's NaN: ignored
		{cInit(), "0.038"},                //
		{asst("m7", 1000, 100), "0.0425"}, //
		{result("null"), "0.0425"},        // null: ignored
		{cInit(), "0.0425"},               //
		{asst("m8", 1000, 100), "0.047"},  //
		{result(`{"usd":1}`), "0.047"},    // an object: ignored
		{`{"type":"result","subtype":"success","is_error":false}`, "0.047"}, // none: the estimate stands
	}
	e, _ := New(Options{Format: FormatClaude})
	for i, s := range steps {
		e.Feed([]byte(s.line), time.Time{})
		if got := e.State().Cost.String(); got != s.cost {
			t.Errorf("after line %d: cost %s, want %s", i+1, got, s.cost)
		}
	}
	e.Finish()
	if r := e.Report(); r.Unparsed != 0 || r.Steps != 8 || r.CostUSD != "0.047" {
		t.Errorf("report %s: every line parses, every call is a step", js(r))
	}
	if r := e.Report(); !strings.HasPrefix(r.CostMismatch, "line 7 reported $0.001 where $0.0045 was counted already") {
		t.Errorf("cost mismatch %q, want line 7's lower total noted", r.CostMismatch)
	}
}

// A negative or ill-typed cost never lowers a total and never drops the
// line's tool calls (pi message cost, opencode step cost).
func TestBadCostKeepsCalls(t *testing.T) {
	piEnd := func(id, cost string) string {
		return `{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"` + id +
			`","name":"bash","arguments":{"command":"ls ` + id + `"}}],"usage":{"cost":{"total":` + cost + `}},"stopReason":"toolUse"}}`
	}
	ocStep := func(id, cost string) []string {
		return []string{`{"type":"step_start","part":{}}`,
			`{"type":"tool_use","part":{"callID":"` + id + `","tool":"bash","state":{"status":"completed","input":{"command":"` + id + `"}}}}`,
			`{"type":"step_finish","part":{"reason":"tool-calls","cost":` + cost + `}}`}
	}
	var oc []string
	for i, c := range []string{"0.5", "-0.25", `"5"`, "NaN", "Infinity", "-Infinity", "null", "true", "[1]", "1e-1"} {
		oc = append(oc, ocStep("c"+itoa(i), c)...)
	}
	tests := []struct {
		name, format string
		lines        []string
		steps        int
		cost         string
	}{
		{"pi", FormatPi, []string{piEnd("a", "0.5"), piEnd("b", "-0.25"), piEnd("c", `"5"`), piEnd("d", "NaN"), piEnd("e", "-Infinity"), piEnd("f", "{}")}, 6, "0.50"},
		{"opencode", FormatOpencode, oc, 10, "0.60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := replayLines(t, tt.format, DefaultGuards(), tt.lines)
			if r.Steps != tt.steps || r.CostUSD != tt.cost || r.Unparsed != 0 {
				t.Errorf("report %s, want %d steps, cost %s, none unparsed", js(r), tt.steps, tt.cost)
			}
		})
	}
}
