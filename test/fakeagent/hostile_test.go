package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TestHostileStream plays the hostile claude stream through the engine: the
// big call is one step of one line, its result says 0, and the cost the
// engine keeps is what the messages were priced at.
func TestHostileStream(t *testing.T) {
	in, err := open("healthy", "claude", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(hostile(in, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"total_cost_usd":0,`) || strings.Contains(s, `"total_cost_usd":0.0435`) {
		t.Errorf("the result's total was not set to 0")
	}
	var big int
	for _, l := range strings.Split(s, "\n") {
		if len(l) > 1<<20 {
			big++
		}
	}
	if big != 1 {
		t.Errorf("%d lines over 1 MiB, want the one call", big)
	}
	e, err := monitor.New(monitor.Options{Format: monitor.FormatClaude})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		e.Feed([]byte(l), time.Time{})
	}
	e.Finish()
	r := e.Report()
	if r.Steps == 0 || r.CostUSD == "0" || r.CostMismatch == "" || r.Unparsed != 0 {
		t.Errorf("steps %d, cost %s, cost mismatch %q, unparsed %d: want the priced messages kept and the result's 0 noted",
			r.Steps, r.CostUSD, r.CostMismatch, r.Unparsed)
	}
	t.Logf("steps %d, cost %s, %s", r.Steps, r.CostUSD, r.CostMismatch)
}
