package monitor

import (
	"strings"
	"testing"
	"time"
)

// replayAudit runs an engine with audited detectors over lines (no clock).
func replayAudit(t *testing.T, g Guards, audit []string, lines []string) Report {
	t.Helper()
	e, err := New(Options{Format: FormatClaude, Guards: g, Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if v := e.Feed([]byte(l), time.Time{}); v.Trip != nil && contains(audit, v.Trip.Detector) {
			t.Fatalf("an audited detector stopped the turn: %+v", v.Trip)
		}
	}
	e.Finish()
	return e.Report()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// An audited detector's trip is a would-trip: the turn goes on to its
// result, the detector's count starts over (identical calls: every 4th
// call; a one-shot bound records once), nudges are still said, warnFirst
// does not warn for it, and a detector that is not audited still trips.
func TestAudit(t *testing.T) {
	type want struct {
		detector string
		count    int
		line     int // call number of the first would-trip
	}
	tests := []struct {
		name      string
		audit     []string
		guards    func(*Guards)
		calls     int  // identical calls in a row
		distinct  bool // each call's arguments differ
		want      []want
		wantTrip  string // detector that stops the turn, "" for none
		wantNudge string // detector of a nudge said, "" for none
	}{
		{name: "identical calls: every 4th would trip", audit: []string{DetectorIdenticalCalls}, calls: 12,
			want: []want{{DetectorIdenticalCalls, 3, 4}}},
		{name: "counts start over: 7 calls would trip once", audit: []string{DetectorIdenticalCalls}, calls: 7,
			want: []want{{DetectorIdenticalCalls, 1, 4}}},
		{name: "audit beats warnFirst: no warning", audit: []string{DetectorIdenticalCalls}, calls: 8,
			guards: func(g *Guards) { g.NudgeDelivery, g.WarnFirst = NudgeDeliveryFile, true },
			want:   []want{{DetectorIdenticalCalls, 2, 4}}},
		{name: "nudges still said", audit: []string{DetectorIdenticalCalls}, calls: 5,
			guards: func(g *Guards) { g.SilentTurns = 3 },
			want:   []want{{DetectorIdenticalCalls, 1, 4}}, wantNudge: DetectorSilentRun},
		{name: "step budget records once", audit: []string{DetectorStepBudget}, calls: 6, distinct: true,
			guards: func(g *Guards) { g.StepBudget = 2 },
			want:   []want{{DetectorStepBudget, 1, 3}}},
		{name: "another detector still trips", audit: []string{DetectorStepBudget}, calls: 6,
			guards: func(g *Guards) { g.StepBudget = 2 },
			want:   []want{{DetectorStepBudget, 1, 3}}, wantTrip: DetectorIdenticalCalls},
		{name: "nothing audited: the loop trips", calls: 6, wantTrip: DetectorIdenticalCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			s.add(cInit())
			callLine := map[int]int{}
			for i := 1; i <= tt.calls; i++ {
				args := map[string]any{"q": "x"}
				if tt.distinct {
					args["n"] = i
				}
				s.claudeToolOnly("grep", args, false)
				callLine[i] = s.len() - 1
			}
			s.claudeSpeak("done")
			s.add(cResult(0.01))
			r := replayAudit(t, guards(tt.guards), tt.audit, s.lines)
			if len(r.WouldTrips) != len(tt.want) {
				t.Fatalf("would-trips %+v, want %+v", r.WouldTrips, tt.want)
			}
			for i, w := range tt.want {
				got := r.WouldTrips[i]
				if got.Detector != w.detector || got.Count != w.count || got.Line != callLine[w.line] || got.Step != w.line ||
					got.Class != ClassOf(w.detector) || got.Message == "" {
					t.Errorf("would-trip %+v, want %s x%d at line %d (step %d)", got, w.detector, w.count, callLine[w.line], w.line)
				}
			}
			switch {
			case tt.wantTrip == "" && (len(r.Trips) != 0 || !r.Result):
				t.Errorf("trips %+v, result %v: want the turn to run to its result", r.Trips, r.Result)
			case tt.wantTrip != "" && (len(r.Trips) != 1 || r.Trips[0].Detector != tt.wantTrip):
				t.Errorf("trips %+v, want %s", r.Trips, tt.wantTrip)
			}
			var nudged []string
			for _, n := range r.Nudges {
				nudged = append(nudged, n.Detector)
			}
			if (tt.wantNudge == "") != (len(nudged) == 0) || tt.wantNudge != "" && !contains(nudged, tt.wantNudge) {
				t.Errorf("nudges %v, want %q", nudged, tt.wantNudge)
			}
		})
	}
}

// A length stop, judged at the end of input, records once.
func TestAuditLengthStop(t *testing.T) {
	lines := []string{cInit(), cAssistant("m", []any{map[string]any{"type": "text", "text": "cut"}}, "max_tokens"), cResult(0)}
	r := replayAudit(t, DefaultGuards(), []string{DetectorLengthStop}, lines)
	if len(r.Trips) != 0 || len(r.WouldTrips) != 1 || r.WouldTrips[0].Detector != DetectorLengthStop || r.WouldTrips[0].Count != 1 {
		t.Fatalf("trips %+v, would-trips %+v: want one lengthStop would-trip", r.Trips, r.WouldTrips)
	}
}

// The stall's silence starts over at the would-trip: the next one needs a
// whole timeout again.
func TestAuditStall(t *testing.T) {
	e, err := New(Options{Format: FormatPi, Audit: []string{DetectorStall}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	e.Feed([]byte(`{"type":"agent_start"}`), t0)
	for _, tick := range []struct {
		after time.Duration
		count int
	}{{10 * time.Minute, 0}, {11 * time.Minute, 1}, {12 * time.Minute, 1}, {21 * time.Minute, 1}, {21*time.Minute + time.Second, 2}} {
		if trip := e.Tick(t0.Add(tick.after)); trip != nil {
			t.Fatalf("tripped at %s: %+v", tick.after, trip)
		}
		if got := e.WouldTripCount(); got != tick.count {
			t.Fatalf("at %s: %d would-trips, want %d", tick.after, got, tick.count)
		}
	}
	if e.StallDue(t0.Add(22 * time.Minute)) {
		t.Error("due right after a would-trip")
	}
}

// Unknown names are refused at New, every one named.
func TestAuditUnknown(t *testing.T) {
	_, err := New(Options{Audit: []string{"nope", DetectorSpend, "bogus"}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), `"bogus"`) || strings.Contains(err.Error(), `"spend"`) {
		t.Fatalf("err %v, want one naming nope and bogus", err)
	}
	if _, err := New(Options{Audit: DetectorNames()}); err != nil {
		t.Fatalf("every detector may be audited: %v", err)
	}
}

// A checkpoint keeps the would-trips and what recorded once.
func TestAuditCheckpoint(t *testing.T) {
	g := guards(func(g *Guards) { g.StepBudget = 1 })
	opts := Options{Format: FormatClaude, Guards: g, Audit: []string{DetectorIdenticalCalls, DetectorStepBudget}}
	s := &stream{}
	s.add(cInit())
	for i := 0; i < 5; i++ {
		s.claudeToolOnly("grep", map[string]any{"q": "x"}, false)
	}
	a, _ := New(opts)
	for _, l := range s.lines {
		a.Feed([]byte(l), time.Time{})
	}
	data, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(opts)
	if err := b.Restore(data); err != nil {
		t.Fatal(err)
	}
	more := &stream{n: 100}
	for i := 0; i < 3; i++ {
		more.claudeToolOnly("grep", map[string]any{"q": "x"}, false)
	}
	for _, l := range more.lines {
		a.Feed([]byte(l), time.Time{})
		b.Feed([]byte(l), time.Time{})
	}
	ra, rb := a.Report(), b.Report()
	if js(ra.WouldTrips) != js(rb.WouldTrips) || b.WouldTripCount() != a.WouldTripCount() {
		t.Fatalf("restored %+v, uninterrupted %+v", rb.WouldTrips, ra.WouldTrips)
	}
	if len(ra.WouldTrips) != 2 || ra.WouldTrips[1].Detector != DetectorIdenticalCalls || ra.WouldTrips[1].Count != 2 || ra.WouldTrips[0].Count != 1 {
		t.Fatalf("would-trips %+v, want stepBudget once and identicalCalls twice", ra.WouldTrips)
	}
}

// Degeneration's whitespace run starts over at the would-trip: 10
// whitespace deltas with whitespaceDeltas 4 would trip at the 4th and 8th.
func TestAuditDegeneration(t *testing.T) {
	s := &stream{}
	s.add(`{"type":"agent_start"}`)
	for range 10 {
		s.piDelta("text", "  ", 0)
	}
	s.piSpeak("done")
	g := guards(func(g *Guards) { g.WhitespaceDeltas = 4 })
	e, err := New(Options{Format: FormatPi, Guards: g, Audit: []string{DetectorDegeneration}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range s.lines {
		if v := e.Feed([]byte(l), time.Time{}); v.Trip != nil {
			t.Fatalf("tripped: %+v", v.Trip)
		}
	}
	r := e.Report()
	if len(r.WouldTrips) != 1 || r.WouldTrips[0].Detector != DetectorDegeneration || r.WouldTrips[0].Count != 2 || r.WouldTrips[0].Line != 5 {
		t.Fatalf("would-trips %+v, want degeneration twice, first at line 5", r.WouldTrips)
	}
}
