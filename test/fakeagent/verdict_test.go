package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// verdicts are how each scenario ends at the default guards (with its own).
var verdicts = map[string]struct {
	trip   string // detector of the trip that stops the turn, "" for none
	nudges int
	result bool // the final result event is seen (a trip ends evaluation before it)
	capUSD string
	guards func(*monitor.Guards)
}{
	"healthy":        {result: true},
	"identicalLoop":  {trip: monitor.DetectorIdenticalCalls},
	"stall":          {trip: monitor.DetectorStall},
	"whitespace":     {trip: monitor.DetectorDegeneration},
	"silentRun":      {nudges: 1, result: true},
	"overspend":      {trip: monitor.DetectorSpend, capUSD: "1.00"},
	"lengthStop":     {trip: monitor.DetectorLengthStop, result: true},
	"noresult":       {},
	"cycle":          {trip: monitor.DetectorCycles, guards: func(g *monitor.Guards) { g.CycleRepeats = 4 }},
	"repeatedErrors": {trip: monitor.DetectorRepeatedErrors},
	"repetition":     {trip: monitor.DetectorRepetition},
}

// Each scenario is the scripted model's of its name (or fake only), and
// ends as that one does: it trips the scripted one's detector, or nudges
// when that one only nudges.
func TestScenariosAreTheScriptedModels(t *testing.T) {
	for _, s := range Scripts() {
		w, ok := verdicts[s.Name]
		if !ok {
			t.Errorf("%s has no verdict", s.Name)
		}
		if slices.Contains(fakeOnly, s.Name) {
			continue
		}
		sc, err := scriptedmodel.Lookup(s.Name)
		switch {
		case err != nil:
			t.Errorf("%v: name the scenario as the scripted model does, or list it in fakeOnly", err)
		case sc.Class != "" && w.trip != sc.Detector:
			t.Errorf("%s trips %q, the scripted model's %q", s.Name, w.trip, sc.Detector)
		case sc.Class == "" && sc.Detector != "" && w.nudges == 0:
			t.Errorf("%s nudges nothing, the scripted model's is nudged by %s", s.Name, sc.Detector)
		}
	}
}

// TestVerdicts runs the real detector engine over every generated stream:
// each scenario must end the way it was written to, in every format.
func TestVerdicts(t *testing.T) {
	for key, text := range Generate() {
		format, name, _ := strings.Cut(key, "/")
		w := verdicts[name]
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
			wantResult := w.result && !(key == "opencode/lengthStop") // opencode's final result is reason stop
			if trip != w.trip || len(r.Nudges) != w.nudges || r.Result != wantResult || r.Unparsed != 0 {
				t.Errorf("trip %q, %d nudges, result %v, %d unparsed; want trip %q, %d nudges, result %v, none unparsed",
					trip, len(r.Nudges), r.Result, r.Unparsed, w.trip, w.nudges, wantResult)
			}
		})
	}
}
