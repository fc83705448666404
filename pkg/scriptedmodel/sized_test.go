package scriptedmodel

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// guardsJSON is g as TURNWATCH_GUARDS carries it; the zero Guards is no
// guards at all (""), as the tests that give none.
func guardsJSON(t *testing.T, g monitor.Guards) json.RawMessage {
	t.Helper()
	if reflect.DeepEqual(g, monitor.Guards{}) {
		return nil
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// guardsOf is what a server reads of g.
func guardsOf(t *testing.T, g monitor.Guards) guards {
	t.Helper()
	out, err := parseGuards(guardsJSON(t, g))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseGuards(t *testing.T) {
	g, err := parseGuards(json.RawMessage(`{"identicalCalls":10,"stallTimeout":"15s","warnFirst":true,"maxCostUSD":"1.00"}`))
	if err != nil || g.IdenticalCalls != 10 || g.StallTimeout.D() != 15*time.Second || !g.WarnFirst {
		t.Errorf("read %+v, %v", g, err)
	}
	d, err := parseGuards(guardsJSON(t, monitor.DefaultGuards()))
	if err != nil || d.IdenticalCalls != 4 || d.WhitespaceDeltas != 128 || d.StallTimeout.D() != 10*time.Minute {
		t.Errorf("the defaults read %+v, %v", d, err)
	}
	for _, bad := range []string{`[]`, `{"stallTimeout":"soon"}`, `{"identicalCalls":"many"}`} {
		if _, err := New(Options{Scenario: Scenarios[0], Guards: json.RawMessage(bad)}); err == nil {
			t.Errorf("guards %s: no error", bad)
		}
	}
}

// played is how many tool calls scenario makes before its final answer,
// driven with a conversation that answers every call (with result, from
// the first call on, when it is not empty).
func played(t *testing.T, scenario string, p *play, result string) int {
	t.Helper()
	sc, err := Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	c := &Conversation{Tools: []Tool{{Name: "Bash", Schema: json.RawMessage(`{"properties":{"command":{"type":"string"}}}`)}},
		Messages: []Message{{Role: "user", Text: "do it"}}}
	if scenario == "subagentLoop" {
		c.Messages[0].Text = subagentPrompt
	}
	for n := 0; n < 1000; n++ {
		r := sc.reply(c, p)
		if len(r.Calls) == 0 {
			return n
		}
		c.Messages = append(c.Messages, Message{Role: "assistant", Calls: r.Calls},
			Message{Role: "user", Results: []Result{{CallID: "x", Text: "answer" + result}}})
	}
	t.Fatalf("%s never answered", scenario)
	return 0
}

func TestLoopsPlayPastTheGuards(t *testing.T) {
	defaults := monitor.DefaultGuards()
	raised := defaults
	raised.IdenticalCalls, raised.CycleRepeats, raised.ErrorRepeats, raised.SilentTurns = 10, 6, 9, 20
	warned := raised
	warned.WarnFirst = true
	tests := []struct {
		name   string
		guards monitor.Guards
		// calls each scenario makes (cycle: two per alternation)
		identical, cycle, errors, silent int
	}{
		{"no guards: as always", monitor.Guards{}, 8, 16, 8, 32},
		{"defaults: as always", defaults, 8, 16, 8, 32},
		{"cycleRepeats 4 (the scenario's own)", func() monitor.Guards { g := defaults; g.CycleRepeats = 4; return g }(), 8, 16, 8, 32},
		{"raised", raised, 12, 16, 11, 40},
		{"raised, warnFirst", warned, 22, 28, 20, 60},
		{"warnFirst at the defaults", func() monitor.Guards { g := defaults; g.WarnFirst = true; return g }(), 10, 16, 14, 44},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &play{guards: guardsOf(t, tt.guards)}
			for _, c := range []struct {
				scenario string
				want     int
			}{{"identicalLoop", tt.identical}, {"subagentLoop", tt.identical}, {"cycle", tt.cycle},
				{"repeatedErrors", tt.errors}, {"silentRun", tt.silent}} {
				if got := played(t, c.scenario, p, ""); got != c.want {
					t.Errorf("%s made %d calls, want %d", c.scenario, got, c.want)
				}
			}
			// Never told of its nudge, silentRun goes on for silentWait calls.
			if got := played(t, "silentRun", p, "\n"+silentNudge+", line 3): report"); got != tt.silent-silentWait {
				t.Errorf("silentRun told of its nudge made %d calls, want %d", got, tt.silent-silentWait)
			}
		})
	}
}

// streamed is what a reply's deltas add up to: the whitespace run's
// deltas and bytes, the text's bytes.
func streamed(r Reply) (deltas, bytes int) {
	for _, d := range append(append([]string{}, r.Thinking...), r.Text...) {
		deltas++
		bytes += len(d)
	}
	return deltas, bytes
}

func TestWhitespacePlaysPastTheGuards(t *testing.T) {
	tests := []struct {
		name          string
		deltas, bytes int // the guards
		wantDeltas    int
		wantBytes     int
	}{
		{"no guards: as always", 0, 0, 256, 512},
		{"defaults: as always", 128, 8192, 256, 512},
		{"more bytes: the deltas trip", 128, 100000, 256, 512},
		{"more deltas: the bytes trip, in 64-byte deltas", 1000, 8192, 64 + 192, 64*2 + 192*64},
		{"more deltas, bytes off", 1000, 0, 1500, 3000},
		{"deltas off", 0, 8192, 64 + 192, 64*2 + 192*64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := guardsOf(t, monitor.Guards{WhitespaceDeltas: tt.deltas, WhitespaceBytes: tt.bytes})
			r := g.whitespaceReply()
			d, b := streamed(r)
			if d != tt.wantDeltas || b != tt.wantBytes {
				t.Errorf("streamed %d deltas, %d bytes; want %d, %d", d, b, tt.wantDeltas, tt.wantBytes)
			}
			trips := (tt.deltas > 0 && d >= tt.deltas) || (tt.bytes > 0 && b >= tt.bytes) || (tt.deltas == 0 && tt.bytes == 0)
			if !trips {
				t.Errorf("%d deltas of %d bytes pass neither guard", d, b)
			}
			for _, s := range append(r.Thinking, r.Text...) {
				if strings.TrimSpace(s) != "" {
					t.Fatalf("a delta is not whitespace: %q", s)
				}
			}
		})
	}
}

func TestRepetitionPlaysPastTheGuard(t *testing.T) {
	tests := []struct {
		guard, wantDeltas, wantBytes int
	}{
		{0, 120, 4920},
		{4096, 120, 4920},
		{16384, 30, 30 * 16 * len(sentence)},
	}
	for _, tt := range tests {
		g := guardsOf(t, monitor.Guards{RepeatedTextBytes: tt.guard})
		r := g.repetitionReply()
		d, b := streamed(r)
		if d != tt.wantDeltas || b != tt.wantBytes || b < tt.guard {
			t.Errorf("guard %d: streamed %d deltas, %d bytes; want %d, %d", tt.guard, d, b, tt.wantDeltas, tt.wantBytes)
		}
		// pi's log: every delta prints the message so far, twice.
		if log := 2 * d * b / 2; log > 1<<20*3/4 {
			t.Errorf("guard %d: pi's log would be about %d bytes", tt.guard, log)
		}
	}
}

func TestStallPausesPastTheGuard(t *testing.T) {
	tests := []struct {
		pause, stall, want time.Duration
	}{
		{0, 0, 10 * time.Minute},
		{time.Second, 0, time.Second},
		{10 * time.Minute, 15 * time.Second, 10 * time.Minute},
		{time.Second, 15 * time.Second, 30 * time.Second},
		{10 * time.Minute, 20 * time.Minute, 40 * time.Minute},
	}
	for _, tt := range tests {
		sc, _ := Lookup("stall")
		srv, err := New(Options{Scenario: sc, Pause: tt.pause, Guards: guardsJSON(t, monitor.Guards{StallTimeout: monitor.Duration(tt.stall)})})
		if err != nil {
			t.Fatal(err)
		}
		if srv.opts.Pause != tt.want {
			t.Errorf("pause %v, stallTimeout %v: paused %v, want %v", tt.pause, tt.stall, srv.opts.Pause, tt.want)
		}
	}
}
