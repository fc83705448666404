//go:build realcli

package realcli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// TestScenarios runs every CLI through every scenario that applies to it
// and checks the verdict the scenario names (scriptedmodel.Scenarios).
func TestScenarios(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			defer logStops(t, c.name)
			for _, sc := range scriptedmodel.Scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					if !sc.Applies(c.format) {
						t.Skipf("%s plays to %v only", sc.Name, sc.Formats)
					}
					if _, _, ex := sc.Verdict(c.format, false); ex.Blind != "" {
						t.Skip(ex.Blind)
					}
					checkScenario(t, c, sc)
				})
			}
		})
	}
}

func checkScenario(t *testing.T, c cli, sc scriptedmodel.Scenario) {
	guards := map[string]any{}
	if sc.Guards != "" {
		if err := json.Unmarshal([]byte(sc.Guards), &guards); err != nil {
			t.Fatalf("%s's guards: %v", sc.Name, err)
		}
	}
	opts := scriptedmodel.Options{Pause: 60 * time.Second}
	o := run(t, c, sc, opts, guards)
	r := o.report
	t.Logf("%s/%s: exit %d, report %+v, stopped in %v", c.name, sc.Name, o.exit, r, o.stopped)
	for _, q := range o.model.Requests() {
		t.Logf("  request %d %s %s side=%v step=%d prompts=%d: %s", q.Seq, q.API, q.Path, q.Side, q.Step, q.Prompts, q.Reply)
	}
	main := o.model.Main()
	if len(main) == 0 {
		t.Fatalf("the model got no request of the main conversation")
	}
	if first := main[0].Conversation; !first.Fresh() {
		t.Errorf("first request carries %d earlier messages: want a fresh conversation", len(first.Messages))
	}
	// A CLI stopped mid-write may leave its last line cut: that one line,
	// and only then, is unparsed.
	if cut := o.trip != nil && !strings.HasSuffix(o.stream, "\n"); r.Unparsed > 1 || (r.Unparsed == 1 && !cut) {
		t.Errorf("unparsed lines: %d (last line cut: %v)", r.Unparsed, cut)
	}
	// The real CLI's stream reads as its format, and its costs are taken as
	// they stand (docs/design.md#format-mismatch, #a-cost-never-goes-down).
	if r.FormatMismatch != "" || r.CostMismatch != "" {
		t.Errorf("formatMismatch %q, costMismatch %q", r.FormatMismatch, r.CostMismatch)
	}
	_, _, ex := sc.Verdict(c.format, false)
	switch {
	case ex.Own != "":
		if !r.Result || !strings.Contains(r.ResultError, ex.Own) {
			t.Errorf("result %v, resultError %q; want the CLI's own guard (%q) reported as a failure", r.Result, r.ResultError, ex.Own)
		}
	case sc.Detector == "silentRun":
		if len(o.nudges) == 0 || o.nudges[0].Detector != "silentRun" {
			t.Errorf("nudges %+v, want silentRun", o.nudges)
		}
		fallthrough
	case sc.Detector == "" && sc.Class == "":
		if o.trip != nil || len(r.Trips) > 0 {
			t.Errorf("tripped: %+v", r.Trips)
		}
		if !r.Result || r.ResultError != "" {
			t.Errorf("result %v, resultError %q; want a successful final result", r.Result, r.ResultError)
		}
	case sc.Detector == "":
		if !r.Result || r.ResultError == "" {
			t.Errorf("result %v, resultError %q; want a final result that reports the failure (%s)", r.Result, r.ResultError, sc.Class)
		}
	case sc.Detector == "stall":
		// A stall is judged from the clock: watch sees it live; a replay
		// without timestamps cannot.
		if o.trip == nil || o.trip.Detector != "stall" {
			t.Errorf("watch's trip %+v, want stall", o.trip)
		} else {
			stops[c.name] = append(stops[c.name], o.stopped)
		}
	case sc.Detector == "lengthStop":
		if r.StopReason != "length" && r.ResultError == "" {
			t.Errorf("stop reason %q, resultError %q: want length, or the CLI's own error", r.StopReason, r.ResultError)
		}
	default:
		if len(r.Trips) == 0 || r.Trips[0].Detector != sc.Detector || string(r.Trips[0].Class) != sc.Class {
			t.Errorf("trips %+v, want %s (%s)", r.Trips, sc.Detector, sc.Class)
		}
		if o.trip == nil {
			t.Errorf("watch did not stop the CLI (exit %d)", o.exit)
		} else {
			stops[c.name] = append(stops[c.name], o.stopped)
		}
		if o.stopped > 5*time.Second {
			t.Errorf("the CLI took %v to stop after the trip, want under 5s", o.stopped)
		}
	}
}

// stops holds, per CLI, how long it took to be gone after each trip
// (SIGTERM to its process group, SIGKILL after watch's grace).
var stops = map[string][]time.Duration{}

// logStops reports a CLI's stop latency: p50 and p99 over its trips.
func logStops(t *testing.T, name string) {
	d := slices.Clone(stops[name])
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	t.Logf("stop latency %s: p50 %v, p99 %v, max %v over %d trips", name, q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), len(d))
}
