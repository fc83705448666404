package monitor

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// forge rewrites the last line of a recorded stream that matches mark:
// the first match of re in it becomes with (every match when all).
type forge struct {
	mark string
	re   string
	with string
	all  bool
}

func (f forge) apply(t *testing.T, data []byte) []byte {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	re := regexp.MustCompile(f.re)
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], f.mark) || !re.MatchString(lines[i]) {
			continue
		}
		if f.all {
			lines[i] = re.ReplaceAllString(lines[i], f.with)
		} else {
			done := false
			lines[i] = re.ReplaceAllStringFunc(lines[i], func(s string) string {
				if done {
					return s
				}
				done = true
				return re.ReplaceAllString(s, f.with)
			})
		}
		return []byte(strings.Join(lines, "\n"))
	}
	t.Fatalf("no line with %q matches %s", f.mark, f.re)
	return nil
}

func readRecording(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/real/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A final result that reports less than the stream's messages were priced
// at (a forged claude result with total_cost_usd 0) leaves the priced cost,
// and the turn notes the difference (docs/design.md#a-cost-never-goes-down).
func TestForgedResultCannotLowerCost(t *testing.T) {
	tests := []struct {
		name, file string
		forge      forge
	}{
		{"claude total 0", "claude/healthy.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":0`, false}},
		{"claude total below", "claude/silentRun.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":0.0001`, false}},
		{"claude total -0", "claude/lengthStop.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":-0.0`, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format := strings.Split(tt.file, "/")[0]
			data := readRecording(t, tt.file)
			honest := replayData(t, data, format)
			got := replayData(t, tt.forge.apply(t, data), format)
			if got.CostUSD != honest.CostUSD || got.Steps != honest.Steps || got.Result != honest.Result {
				t.Errorf("forged: cost %s steps %d result %v; honest: cost %s steps %d result %v",
					got.CostUSD, got.Steps, got.Result, honest.CostUSD, honest.Steps, honest.Result)
			}
			if honest.CostMismatch != "" {
				t.Errorf("the honest stream noted %q", honest.CostMismatch)
			}
			if format == FormatClaude && !strings.Contains(got.CostMismatch, "the turn keeps $"+honest.CostUSD) {
				t.Errorf("cost mismatch %q, want the lower total noted, the turn keeping $%s", got.CostMismatch, honest.CostUSD)
			}
		})
	}
}

// A cost or a token count no model could produce is not counted, whatever
// the format, and the turn notes it: the forged report reaches no total
// and trips no spend cap (docs/design.md#implausible-costs).
func TestImplausibleCostNotCounted(t *testing.T) {
	tests := []struct {
		name, file string
		forge      forge
	}{
		{"claude total 1e300", "claude/healthy.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":1e300`, false}},
		{"claude total at the saturation", "claude/healthy.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":9223372.036854775807`, false}},
		{"claude total 1000 for a short turn", "claude/healthy.jsonl", forge{`"type":"result"`, `"total_cost_usd":[0-9.e-]+`, `"total_cost_usd":1000`, false}},
		{"claude output tokens 9e18", "claude/healthy.jsonl", forge{`"message_start"`, `"output_tokens":[0-9]+`, `"output_tokens":9000000000000000000`, false}},
		{"claude input tokens past the context", "claude/silentRun.jsonl", forge{`"message_start"`, `"input_tokens":[0-9]+`, `"input_tokens":5000000`, false}},
		{"pi message cost 1e300", "pi/healthy.jsonl", forge{`"type":"message_end"`, `"total":[0-9.e-]+\}`, `"total":1e300}`, false}},
		{"opencode step cost 1e300", "opencode/healthy.jsonl", forge{`"type":"step_finish"`, `"cost":[0-9.e-]+\}`, `"cost":1e300}`, false}},
		{"opencode step cost 5000 (no model named: ten times the dearest rates)", "opencode/healthy.jsonl", forge{`"type":"step_finish"`, `"cost":[0-9.e-]+\}`, `"cost":5000}`, false}},
		{"codex usage 9e18", "codex/healthy.jsonl", forge{`"turn.completed"`, `"input_tokens":[0-9]+`, `"input_tokens":9000000000000000000`, false}},
		{"gemini usage past the session", "gemini/healthy.jsonl", forge{`"type":"result"`, `"input":[0-9]+`, `"input":90000000`, true}},
	}
	capped := guards(func(g *Guards) { g.MaxCostUSD = "1" })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format := strings.Split(tt.file, "/")[0]
			data := readRecording(t, tt.file)
			honest := replayOpts(t, data, Options{Format: format, Guards: capped})
			got := replayOpts(t, tt.forge.apply(t, data), Options{Format: format, Guards: capped})
			gotCost, _ := ParseMoney(got.CostUSD)
			honestCost, _ := ParseMoney(honest.CostUSD)
			if gotCost > honestCost || got.Steps != honest.Steps || got.Result != honest.Result || len(got.Trips) != len(honest.Trips) {
				t.Errorf("forged: %s\nhonest: %s", js(got), js(honest))
			}
			if !strings.Contains(got.CostMismatch, "not counted") {
				t.Errorf("cost mismatch %q, want the report refused", got.CostMismatch)
			}
		})
	}
}

// The ceilings hold what real models report: the recorded streams of every
// CLI note nothing on their cost.
func TestRecordedCostsArePlausible(t *testing.T) {
	for _, f := range realRecordings(t) {
		format := strings.Split(strings.TrimPrefix(f, "testdata/real/"), "/")[0]
		if r := replayFile(t, f, format); r.CostMismatch != "" {
			t.Errorf("%s: %s", f, r.CostMismatch)
		}
	}
}

// A session's total may cover more than the messages the stream showed
// (claude's subagents, which a stream may leave out), up to the ceiling
// of one message per message and tool call seen, plus one.
func TestSessionTotalCeiling(t *testing.T) {
	p := DefaultPrices()
	mp, _ := p.lookup([]byte("claude-sonnet-4-5"))
	one := p.ceiling().messageCost(mp)
	if one.String() != "11.34" { // 2M x $3.75 + 256k x $15
		t.Fatalf("one sonnet 4.5 message costs at most %s", one)
	}
	if unpriced := satMulMoney(p.ceiling().messageCost(p.top), unpricedFactor); unpriced.String() != "567.00" { // 10 x (2M x $18.75 + 256k x $75)
		t.Fatalf("one message of a model the table does not price costs at most %s", unpriced)
	}
	asst := `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":10,"output_tokens":10}}}`
	result := func(total string) string {
		return `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":` + total + `}`
	}
	// One message, one call: three messages' ceiling, each at the table's
	// dearest rates (a subagent's model may be dearer than the session's).
	for total, counted := range map[string]bool{"170.10": true, "170.11": false} {
		r := replayLines(t, FormatClaude, DefaultGuards(), []string{cInit(), asst, result(total)})
		if (r.CostUSD == total) != counted || (r.CostMismatch == "") != counted {
			t.Errorf("total %s: %s, counted %v", total, js(r), counted)
		}
	}
}

// One message's usage is judged as it stands with each report: two
// reports of one message, each within the ceiling, cannot add up past it.
func TestMessageUsageAcrossReports(t *testing.T) {
	usage := func(u string) string {
		return `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[],"usage":{` + u + `}}}`
	}
	r := replayLines(t, FormatClaude, DefaultGuards(), []string{cInit(),
		usage(`"input_tokens":1500000,"output_tokens":10`), usage(`"cache_read_input_tokens":1500000`)})
	if r.CostUSD != "4.50015" || !strings.Contains(r.CostMismatch, "line 3: token usage input 1500000, output 10, cache read 1500000") {
		t.Errorf("report %s", js(r))
	}
}
