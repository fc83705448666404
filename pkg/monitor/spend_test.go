package monitor

import "testing"

func TestSpendCheck(t *testing.T) {
	m := func(s string) Money { v, _ := ParseMoney(s); return v }
	tests := []struct {
		cost, cap string
		want      string
	}{
		{"5.00", "5.00", ""}, // strictly above the cap
		{"5.000000000001", "5.00", "spent $5.000000000001, over the $5.00 cap"},
		{"0.51", "0.5", "spent $0.51, over the $0.50 cap"},
	}
	for _, tt := range tests {
		_, msg, failed := spend(&State{Cost: m(tt.cost), Cap: m(tt.cap)})
		if failed != (tt.want != "") || msg != tt.want {
			t.Errorf("cost %s cap %s: %q, want %q", tt.cost, tt.cap, msg, tt.want)
		}
	}
	if _, _, failed := spend(&State{Cost: m("1e6"), Cap: -1}); failed {
		t.Error("no cap, no check")
	}
}

// How each format's cost accrues: pi replaces a message's cost with its
// latest partial (never summing partials, never counting the end twice);
// opencode adds per step; claude prices each message's tokens from the
// table and takes total_cost_usd at the result; codex usage is cumulative
// (each report replaces the last); earlier turns of the run are added.
func TestSpendAccrual(t *testing.T) {
	t.Run("pi partials replace, exact decimals", func(t *testing.T) {
		s := &stream{}
		s.piDelta("text", "a", 0.1)
		s.piDelta("text", "b", 0.2)
		s.add(js(map[string]any{"type": "message_end", "message": piMsg([]any{piText("ab")}, 0.2, "stop")}))
		s.add(js(map[string]any{"type": "message_end", "message": piMsg([]any{piText("c")}, 0.1, "stop")}))
		s.add(js(map[string]any{"type": "turn_end", "message": piMsg([]any{piText("c")}, 0.1, "stop")}))
		s.add(js(map[string]any{"type": "agent_end", "messages": []any{piMsg([]any{piText("c")}, 0.1, "stop")}}))
		if r := replayLines(t, FormatPi, DefaultGuards(), s.lines); r.CostUSD != "0.30" {
			t.Fatalf("cost %s, want 0.30 (0.2 + 0.1, exactly)", r.CostUSD)
		}
	})
	t.Run("claude tokens then total_cost_usd", func(t *testing.T) {
		lines := []string{cInit(),
			// sonnet 4.5: 100 in x $3 + 20 out x $15 per MTok = 0.0006; repeated id: replaced
			cAssistant("m1", []any{map[string]any{"type": "text", "text": "hi"}}, nil),
			cAssistant("m1", []any{map[string]any{"type": "text", "text": "hi"}}, "end_turn"),
		}
		if r := replayLines(t, FormatClaude, DefaultGuards(), lines); r.CostUSD != "0.0006" {
			t.Fatalf("cost %s, want 0.0006", r.CostUSD)
		}
		lines = append(lines, cResult(0.0123), cInit(), cAssistant("m2", []any{}, "end_turn"))
		if r := replayLines(t, FormatClaude, DefaultGuards(), lines); r.CostUSD != "0.0129" {
			t.Fatalf("cost %s, want 0.0123 + 0.0006", r.CostUSD)
		}
	})
	t.Run("codex cumulative usage", func(t *testing.T) {
		done := func(in, cached, out int) string {
			return js(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": in, "cached_input_tokens": cached, "output_tokens": out}})
		}
		lines := []string{`{"type":"thread.started","thread_id":"t"}`, `{"type":"turn.started"}`, done(1_000_000, 0, 0),
			`{"type":"turn.started"}`, done(2_000_000, 1_000_000, 0)}
		// gpt-5-codex: 1M fresh input = 1.25; then 1M fresh + 1M cached = 1.25 + 0.125
		if r := replayLines(t, FormatCodex, DefaultGuards(), lines); r.CostUSD != "1.375" {
			t.Fatalf("cost %s, want 1.375", r.CostUSD)
		}
	})
	t.Run("prior cost and cap", func(t *testing.T) {
		e, _ := New(Options{Format: FormatOpencode, Guards: guards(func(g *Guards) { g.MaxCostUSD = "1.00" }), PriorCostUSD: "0.99"})
		e.Feed([]byte(`{"type":"step_start","part":{}}`), zeroTime)
		v := e.Feed([]byte(`{"type":"step_finish","part":{"reason":"tool-calls","cost":0.011}}`), zeroTime)
		if v.Trip == nil || v.Trip.Message != "spent $1.001 (this turn $0.011, earlier turns $0.99), over the $1.00 cap" || v.Trip.Line != 2 {
			t.Fatalf("trip %+v", v.Trip)
		}
		// The cap weighs the earlier turns; the report is this turn's own.
		if r := e.Report(); r.CostUSD != "0.011" {
			t.Fatalf("reported cost %s, want the turn's own 0.011", r.CostUSD)
		}
	})
}
