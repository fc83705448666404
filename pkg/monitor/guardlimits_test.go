package monitor

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestOverLimit(t *testing.T) {
	tests := []struct {
		kind   GuardKind
		v, lim string
		over   bool
	}{
		{GuardCount, `64`, `128`, false},
		{GuardCount, `128`, `128`, false},
		{GuardCount, `129`, `128`, true},
		{GuardCount, `0`, `128`, true}, // off asks for more than any limit
		{GuardCount, `null`, `128`, true},
		{GuardCount, `64`, `0`, false}, // a limit of 0 holds nothing
		{GuardCount, `"x"`, `128`, true},
		{GuardCount, `64`, `"x"`, false},
		{GuardDuration, `"5m"`, `"10m"`, false},
		{GuardDuration, `"1h"`, `"10m"`, true},
		{GuardDuration, `"0s"`, `"10m"`, true},
		{GuardCost, `"1.50"`, `"2.00"`, false},
		{GuardCost, `"2.01"`, `"2.00"`, true},
		{GuardCost, `""`, `"2.00"`, true},
		{GuardBool, `true`, `false`, false}, // a bool has no limit
	}
	for _, tt := range tests {
		if got := OverLimit(tt.kind, json.RawMessage(tt.v), json.RawMessage(tt.lim)); got != tt.over {
			t.Errorf("kind %d: %s over %s = %v, want %v", tt.kind, tt.v, tt.lim, got, tt.over)
		}
	}
}

func TestOverrideGuards(t *testing.T) {
	base := `{"stepBudget":256,"identicalCalls":4,"stallTimeout":"10m","maxCostUSD":"5"}`
	limits := `{"stepBudget":300,"stallTimeout":"15m","maxCostUSD":"5"}`
	tests := []struct {
		name, override string
		want           map[string]string
		capped         []string
		err            bool
	}{
		{"none", ``, map[string]string{"stepBudget": `256`, "stallTimeout": `"10m"`}, nil, false},
		{"lower", `{"stepBudget":64}`, map[string]string{"stepBudget": `64`}, nil, false},
		{"higher, capped", `{"stepBudget":1000,"stallTimeout":"0s"}`, map[string]string{"stepBudget": `300`, "stallTimeout": `"15m"`}, []string{"stallTimeout", "stepBudget"}, false}, // table order
		{"unlimited guard", `{"identicalCalls":9}`, map[string]string{"identicalCalls": `9`}, nil, false},
		{"cost off, capped", `{"maxCostUSD":""}`, map[string]string{"maxCostUSD": `"5"`}, []string{"maxCostUSD"}, false},
		{"not JSON", `{stepBudget`, map[string]string{"stepBudget": `256`}, nil, true},
		{"unknown guard", `{"stepBudgets":1}`, map[string]string{"stepBudget": `256`}, nil, true},
		{"bad value", `{"stepBudget":"many"}`, map[string]string{"stepBudget": `256`}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, capped, err := OverrideGuards([]byte(base), []byte(tt.override), []byte(limits))
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s (all: %s)", k, got[k], v, out)
				}
			}
			if !slices.Equal(capped, tt.capped) {
				t.Errorf("capped %v, want %v", capped, tt.capped)
			}
			if _, err := ParseGuards(out); err != nil {
				t.Errorf("the result does not parse: %v", err)
			}
		})
	}
}
