package shared

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, in string
		check    func(Config) string
		err      string
	}{
		{"empty keeps the defaults", "", func(c Config) string {
			if *c.Guards.StepBudget != 256 || *c.Guards.IdenticalCalls != 4 || *c.Guards.StallTimeout != "10m" || *c.Rerolls.Max != 1 ||
				c.Prices != nil || c.SettleGrace.Duration != 30*time.Second || c.Guards.MaxCostUSD != nil {
				return "defaults changed"
			}
			return ""
		}, ""},
		{"overrides merge field by field", `
guards:
  stepBudget: 64
  worldTools: [run_tests]
  maxCostUSD: "5.00"
prices:
  claude-sonnet-4: {input: "3", output: "15"}
rerolls:
  max: 2
settleGrace: 5s
`, func(c Config) string {
			if *c.Guards.StepBudget != 64 || *c.Guards.IdenticalCalls != 4 || c.Guards.WorldTools[0] != "run_tests" || *c.Guards.MaxCostUSD != "5.00" {
				return "guards not merged"
			}
			if string(c.Prices) != `{"claude-sonnet-4":{"input":"3","output":"15"}}` {
				return "prices: " + string(c.Prices)
			}
			if *c.Rerolls.Max != 2 || len(c.Rerolls.Classes) != len(DefaultConfig().Rerolls.Classes) || c.SettleGrace.Duration != 5*time.Second {
				return "rerolls or grace not merged"
			}
			return ""
		}, ""},
		{"JSON too", `{"guards":{"identicalCalls":0}}`, func(c Config) string {
			if *c.Guards.IdenticalCalls != 0 {
				return "not read"
			}
			return ""
		}, ""},
		{"typo", "gaurds: {}", nil, "unknown field"},
		{"negative count", "guards: {whitespaceBytes: -1}", nil, "guards.whitespaceBytes"},
		{"bad duration", "guards: {stallTimeout: soon}", nil, "guards.stallTimeout"},
		{"cycle of one", "guards: {cycleRepeats: 1}", nil, "guards.cycleRepeats"},
		{"negative pattern count", "guards: {errorRepeats: -1}", nil, "guards.errorRepeats"},
		{"bad money", `guards: {maxCostUSD: "five"}`, nil, "guards.maxCostUSD"},
		// The engine refuses these, so the manager must: every sidecar would
		// exit at start and every turn fail as infra (monitor.ParseGuards is
		// the one validator).
		{"negative duration", `guards: {stallTimeout: "-1s"}`, nil, "guards.stallTimeout"},
		{"negative refuse wait", `guards: {refuseWait: "-1s"}`, nil, "guards.refuseWait"},
		{"negative money", `guards: {maxCostUSD: "-1"}`, nil, "guards.maxCostUSD"},
		{"overspend reroll", "rerolls: {classes: [overspend]}", nil, "overspend"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := c.check(cfg); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// The cluster defaults are the detector table's, every guard that has one:
// handed to a sidecar they parse to the engine's own defaults.
func TestDefaultGuardsFromTable(t *testing.T) {
	g := DefaultConfig().Guards
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var set map[string]any
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	for _, gd := range monitor.AllGuards() {
		if _, ok := gd.Default(); ok != (set[gd.Name] != nil) {
			t.Errorf("guard %s: default in the table %v, in the manager's config %v", gd.Name, ok, set[gd.Name])
		}
	}
	got, err := monitor.ParseGuards(b)
	if err != nil {
		t.Fatalf("the engine refuses the manager's defaults %s: %v", b, err)
	}
	if want := monitor.DefaultGuards(); !reflect.DeepEqual(got, want) {
		t.Errorf("the manager's defaults parse to\n %+v\nwant\n %+v", got, want)
	}
}

func TestSumUSD(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, "0.00"}, {[]string{"0.1", "0.2"}, "0.30"}, {[]string{"1.25", "", "0.0625"}, "1.3125"}, {[]string{"2", "bad"}, "2.00"},
		{[]string{"0.02463", "0.02463"}, "0.04926"}, {[]string{"1e-7", "0.1"}, "0.1000001"},
	} {
		if got := SumUSD(c.in...); got != c.want {
			t.Errorf("sumUSD(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
