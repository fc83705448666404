package monitor

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultPrices(t *testing.T) {
	p := DefaultPrices()
	if p.ReadAt == "" || len(p.Models) == 0 || p.DefaultModel[FormatCodex] == "" {
		t.Fatalf("embedded table incomplete: %+v", p)
	}
	for name, mp := range p.Models {
		if mp.Input <= 0 || mp.Output <= 0 || mp.Source == "" {
			t.Errorf("%s: %+v", name, mp)
		}
	}
	if _, ok := p.lookup([]byte(p.DefaultModel[FormatCodex])); !ok {
		t.Error("codex's default model must be priced")
	}
}

func TestPriceLookup(t *testing.T) {
	p := DefaultPrices()
	tests := map[string]string{
		"claude-sonnet-4-5-20250929": "3.00",
		"claude-opus-4-1-20250805":   "15.00",
		"claude-opus-4-5-20251101":   "5.00", // longest prefix, not claude-opus-4
		"gpt-5.1-codex-max":          "1.25",
		"gemini-2.5-pro":             "1.25",
		"gemini-2.5-flash-lite":      "0.10", // not gemini-2.5-flash
		"gemini-2.5-flash":           "0.30",
		"gemini-3-flash-preview":     "0.50",
		"gemini-1.0-pro":             "",
	}
	for model, input := range tests {
		mp, ok := p.lookup([]byte(model))
		if ok != (input != "") || ok && mp.Input.String() != input {
			t.Errorf("%s: %v %s, want %q", model, ok, mp.Input, input)
		}
	}
}

func TestParsePrices(t *testing.T) {
	p, err := ParsePrices([]byte(`{"readAt":"2027-01-01","models":{"gemini-9-pro":{"input":"1.25","output":"10"},"claude-sonnet-4-5":{"input":"1","output":"2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if mp, _ := p.lookup([]byte("gemini-9-pro")); mp.Output.String() != "10.00" {
		t.Error("added model missing")
	}
	if mp, _ := p.lookup([]byte("claude-sonnet-4-5-x")); mp.Input.String() != "1.00" {
		t.Error("override not applied")
	}
	if _, ok := p.lookup([]byte("claude-opus-4-5")); !ok {
		t.Error("defaults must stay")
	}
	if empty, err := ParsePrices([]byte(" ")); err != nil || len(empty.Models) != len(DefaultPrices().Models) {
		t.Errorf("an empty table: %d models, %v; want the defaults", len(empty.Models), err)
	}
	if _, err := ParsePrices([]byte(`{"models":{"m":{"input":"x"}}}`)); err == nil || !strings.Contains(err.Error(), "models.m") {
		t.Errorf("error %v, want one naming models.m", err)
	}
}

// The table's token ceilings read as the chart renders them (YAML turns
// 2000000 into 2e+06) and as strings; a fraction, a negative or garbage is
// an error; a table that sets none keeps the embedded ones.
func TestMaxMessageTokens(t *testing.T) {
	def := DefaultPrices().MaxMessageTokens
	if def.Input <= 0 || def.Output <= 0 || def.Why == "" {
		t.Fatalf("embedded ceilings %+v", def)
	}
	p, err := ParsePrices([]byte(`{"maxMessageTokens":{"input":4e+06,"output":"300000"},"models":{}}`))
	if err != nil || p.MaxMessageTokens.Input != 4_000_000 || p.MaxMessageTokens.Output != 300_000 {
		t.Errorf("%+v, %v", p.MaxMessageTokens, err)
	}
	if p, err := ParsePrices([]byte(`{"models":{}}`)); err != nil || p.MaxMessageTokens.Input != def.Input || p.MaxMessageTokens.Output != def.Output {
		t.Errorf("no ceilings: %+v, %v", p.MaxMessageTokens, err)
	}
	for _, bad := range []string{`1.5`, `-1`, `"lots"`, `1e300`} {
		if _, err := ParsePrices([]byte(`{"maxMessageTokens":{"input":` + bad + `},"models":{}}`)); err == nil {
			t.Errorf("input %s accepted", bad)
		}
	}
}

// Price is the engine's price of a metered message: a test's oracle for
// the metered cost is the same rule, not a copy of it.
func TestPricesPrice(t *testing.T) {
	p, err := ParsePrices([]byte(`{"readAt":"2027-01-01","models":{"claude-sonnet-4":{"input":"3","output":"15","cacheRead":"0.3","cacheWrite":"3.75"},"claude-sonnet-4-5":{"input":"1","output":"2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	u := Usage{Input: 1_000_000, Output: 100_000, CacheRead: 10_000, CacheWrite: 1000}
	for _, tt := range []struct {
		model, want string
	}{
		{"claude-sonnet-4-5-20250929", "1.20"},   // the longest prefix
		{"claude-sonnet-4-20250514", "4.506750"}, // every bucket
		{"gpt-unknown", "0.00"},                  // unpriced
	} {
		got := p.Price(tt.model, u)
		want, _ := ParseMoney(tt.want)
		if got != want {
			t.Errorf("%s: %s, want %s", tt.model, got, want)
		}
		e, _ := New(Options{Format: FormatClaude, Prices: p, Metered: true})
		e.FeedModel(ModelEvent{End: true, Model: tt.model, Usage: u}, time.Time{})
		if e.State().Cost != got {
			t.Errorf("%s: the engine metered %s, Price says %s", tt.model, e.State().Cost, got)
		}
	}
}
