package monitor

import (
	"strings"
	"testing"
	"time"
)

func TestParseGuards(t *testing.T) {
	g, err := ParseGuards([]byte(`{"stepBudget":100,"stallTimeout":"90s","worldTools":["run_tests"],"maxCostUSD":"5.00"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultGuards()
	want.StepBudget, want.StallTimeout, want.WorldTools, want.MaxCostUSD = 100, Duration(90*time.Second), []string{"run_tests"}, "5.00"
	if js(g) != js(want) {
		t.Errorf("got %s, want %s", js(g), js(want))
	}
	if g, err := ParseGuards(nil); err != nil || js(g) != js(DefaultGuards()) {
		t.Errorf("empty input: %s %v", js(g), err)
	}
	bad := map[string]string{
		`{"stepBudgets":1}`:          "stepBudgets",
		`{"stepBudget":-1}`:          "stepBudget",
		`{"stepBudget":"x"}`:         "stepBudget",
		`{"identicalCalls":1.5}`:     "identicalCalls",
		`{"stallTimeout":"soon"}`:    "stallTimeout",
		`{"toolTimeout":600}`:        "toolTimeout",
		`{"worldTools":"run_tests"}`: "worldTools",
		`{"maxCostUSD":5}`:           "maxCostUSD",
		`{"maxCostUSD":"five"}`:      "maxCostUSD",
		`[1]`:                        "not a JSON object",
	}
	for in, field := range bad {
		if _, err := ParseGuards([]byte(in)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one naming %s", in, err, field)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	b, _ := DefaultGuards().StallTimeout.MarshalJSON()
	if string(b) != `"10m0s"` {
		t.Errorf("marshal %s", b)
	}
}

// Short writes durations as the manager's defaults and the chart's values
// show them.
func TestDurationShort(t *testing.T) {
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
		{2 * time.Second, "2s"},
		{1500 * time.Millisecond, "1.5s"},
		{0, "0s"},
	} {
		if got := Duration(tc.in).Short(); got != tc.want {
			t.Errorf("Duration(%v).Short() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
