package protocol

import (
	"encoding/json"
	"reflect"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func progress(t *testing.T, steps int64, cost string) Progress {
	t.Helper()
	p, err := ParseProgress(steps, cost)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Counts only grow: one rule for the sidecar (Ahead: worth writing) and the
// controller (Behind: an older report, dropped).
func TestProgressOrder(t *testing.T) {
	was := progress(t, 3, "0.10")
	for _, c := range []struct {
		steps         int64
		cost          string
		behind, ahead bool
	}{
		{3, "0.1", false, false}, // the same amount, spelled otherwise
		{4, "0.10", false, true},
		{3, "0.11", false, true},
		{2, "0.20", true, false},
		{4, "0.05", true, false},
	} {
		p := progress(t, c.steps, c.cost)
		if p.Behind(was) != c.behind || p.Ahead(was) != c.ahead {
			t.Errorf("%d %s over %+v: behind %v ahead %v, want %v %v", c.steps, c.cost, was, p.Behind(was), p.Ahead(was), c.behind, c.ahead)
		}
	}
	if _, err := ParseProgress(1, "lots"); err == nil {
		t.Error("a cost that is not a decimal was read")
	}
	if p := progress(t, 1, ""); p.Cost != 0 || p.CostUSD() != "0.00" {
		t.Errorf("an empty cost reads %+v", p)
	}
}

// The summary's wire form is what it was with string costs: steps and
// costUSD at the top level.
func TestSummaryWire(t *testing.T) {
	s := Summary{Progress: progress(t, 2, "0.5"), StopReason: "end", Result: true, Complete: true}
	want := `{"steps":2,"costUSD":"0.50","stopReason":"end","result":true,"lines":0,"unparsed":0,"complete":true}`
	if got := Marshal(s); got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	var back Summary
	if err := json.Unmarshal([]byte(want), &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("read back %+v %v", back, err)
	}
}

// The settle rules, in order: a length stop, a result that reports an
// error, a result; nothing else settles.
func TestSummaryEnding(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Summary
		want Ending
		msg  string
	}{
		{"result", Summary{Result: true, StopReason: "end"}, EndedResult, ""},
		{"the agent's error", Summary{Result: true, ResultError: "boom"}, EndedAgentError, "boom"},
		{"length before the agent's error", Summary{Result: true, ResultError: "boom", StopReason: "length"}, EndedLength, monitor.LengthStopMessage},
		{"length without a result", Summary{StopReason: "length"}, EndedLength, monitor.LengthStopMessage},
		{"an error without a result", Summary{ResultError: "boom"}, EndedUnsaid, ""},
		{"nothing", Summary{}, EndedUnsaid, ""},
	} {
		if got, msg := c.s.Ending(); got != c.want || msg != c.msg {
			t.Errorf("%s: %d %q, want %d %q", c.name, got, msg, c.want, c.msg)
		}
	}
}
