package controllers

import (
	"strings"
	"testing"
	"time"
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
		{"overspend reroll", "rerolls: {classes: [overspend]}", nil, "overspend"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig([]byte(c.in))
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

func TestSumUSD(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, "0.00"}, {[]string{"0.1", "0.2"}, "0.30"}, {[]string{"1.25", "", "0.0625"}, "1.3125"}, {[]string{"2", "bad"}, "2.00"},
		{[]string{"0.02463", "0.02463"}, "0.04926"}, {[]string{"1e-7", "0.1"}, "0.1000001"},
	} {
		if got := sumUSD(c.in...); got != c.want {
			t.Errorf("sumUSD(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDurationString(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{30 * time.Minute, "30m"},
		{90 * time.Second, "1m30s"},
		{2 * time.Hour, "2h"},
		{time.Hour + 30*time.Minute, "1h30m"},
		{45 * time.Second, "45s"},
	} {
		if got := durationString(tc.in); got != tc.want {
			t.Errorf("durationString(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
