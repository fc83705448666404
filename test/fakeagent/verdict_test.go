package main

import (
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TestVerdicts runs the real detector engine over every generated stream:
// each scenario must end the way it was written to, in every format.
func TestVerdicts(t *testing.T) {
	want := map[string]struct {
		trip   string // detector of the trip that stops the turn, "" for none
		nudges int
		result bool // the final result event is seen (a trip ends evaluation before it)
		capUSD string
		guards func(*monitor.Guards)
	}{
		"healthy":    {result: true},
		"loop":       {trip: monitor.DetectorIdenticalCalls},
		"stall":      {trip: monitor.DetectorStall},
		"whitespace": {trip: monitor.DetectorDegeneration},
		"silent":     {nudges: 1, result: true},
		"overspend":  {trip: monitor.DetectorSpend, capUSD: "1.00"},
		"length":     {trip: monitor.DetectorLengthStop, result: true},
		"noresult":   {},
		"cycle":      {trip: monitor.DetectorCycles, guards: func(g *monitor.Guards) { g.CycleRepeats = 4 }},
		"errors":     {trip: monitor.DetectorRepeatedErrors},
		"repeat":     {trip: monitor.DetectorRepetition},
	}
	for key, text := range Generate() {
		format, name, _ := strings.Cut(key, "/")
		w := want[name]
		t.Run(key, func(t *testing.T) {
			g := monitor.DefaultGuards()
			g.MaxCostUSD = w.capUSD
			if w.guards != nil {
				w.guards(&g)
			}
			eng, err := monitor.New(monitor.Options{Format: format, Guards: g})
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				eng.Feed([]byte(line), time.Time{})
			}
			eng.Finish()
			r := eng.Report()
			trip := ""
			if len(r.Trips) > 0 {
				trip = r.Trips[0].Detector
			}
			wantResult := w.result && !(key == "opencode/length") // opencode's final result is reason stop
			if trip != w.trip || len(r.Nudges) != w.nudges || r.Result != wantResult || r.Unparsed != 0 {
				t.Errorf("trip %q, %d nudges, result %v, %d unparsed; want trip %q, %d nudges, result %v, none unparsed",
					trip, len(r.Nudges), r.Result, r.Unparsed, w.trip, w.nudges, wantResult)
			}
		})
	}
}
