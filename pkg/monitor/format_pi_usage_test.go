package monitor

import (
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// TestPiUsageSpellings: usage.cost.total reads the same whatever the
// members around it, their order, their values' types and the spacing,
// so that the fast step over members in pi's order (skipOrdered) never
// reads what the member-by-member readers would not.
func TestPiUsageSpellings(t *testing.T) {
	for _, c := range []struct {
		usage string
		cost  string // "" for no cost read
		ok    bool   // the object is read whole
	}{
		{`{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.25}}`, "0.25", true},
		{`{"cost":{"total":0.25,"input":0},"input":10}`, "0.25", true},
		{`{"input":10,"output":5,"cost":{"input":0,"output":0,"total":0.5,"total":0.75}}`, "0.75", true},
		{`{"input":"10","output":null,"cacheRead":[1],"cacheWrite":{},"totalTokens":1e3,"cost":{"input":-0,"output":1.5E-3,"cacheRead":0,"cacheWrite":0,"total":1}}`, "1", true},
		{`{"input":10,"output":5,"cost":{"input":0,"total":0.5},"cost":null}`, "0.5", true},
		{`{"input":10,"output":5,"cost":{"input":0,"output":NaN,"total":0.5}}`, "", false},
		{`{"input":10,"output":5,"cost":{"input":0,"output":0,"total":NaN}}`, "", true},
		{`{"input":10,"output":5,"cost":{"input":0,"output":01,"total":0.5}}`, "", false},
		{`{"input":10,"output":5x,"cost":{"total":0.5}}`, "", false},
		{`{"input":10 ,"output": 5,"cost":{"input":0, "output":0,"total":0.5}}`, "0.5", true},
		{`{"input":10,"output":5,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"tot\u0061l":0.5}}`, "", true},
	} {
		var s jsonscan.Scanner
		var m piMessage
		// As in a line: more members follow (the fast paths look ahead).
		s.Reset([]byte(c.usage + `,"stopReason":"toolUse","timestamp":1767401001200}`))
		readPiUsage(&s, &m, nil)
		ok := !s.Bad && s.Pos == len(c.usage)
		got := ""
		if m.hasCost {
			got = m.cost.String()
		}
		want := ""
		if c.cost != "" {
			w, err := ParseMoney(c.cost)
			if err != nil {
				t.Fatal(err)
			}
			want = w.String()
		}
		if ok != c.ok || got != want {
			t.Errorf("%s: read whole %v, cost %q; want %v, %q", c.usage, ok, got, c.ok, want)
		}
	}
}
