package sidecar

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// recorded reads a recorded stream as the agent wrote it: the kubectl
// --timestamps prefix cut, so the stall is judged by the test's clock only.
func recorded(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i := strings.Index(l, " {"); i > 0 && !strings.HasPrefix(l, "{") {
			l = l[i+1:]
		}
		out = append(out, l)
	}
	return out
}

// An identical-call loop with identicalCalls audited (the fake agent's
// claude loop: 100 identical calls, then a result): the stream runs to its
// end and Finishes with the result, nothing trips, the WouldTrip condition
// counts every 4th call, the silent-run nudge is still delivered, and the
// hook never refuses a call. The condition is written at the first
// would-trip and with the summary only: the counts between wait for the
// Progress period (an hour here).
func TestRunAuditedLoop(t *testing.T) {
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, &scriptedSource{lines: recorded(t, "../test/fakeagent/scenarios/claude/identicalLoop.log")}, p, clock.RealClock{})
	r.cfg.Audit = []string{monitor.DetectorIdenticalCalls}
	r.cfg.Guards.NudgeDelivery = monitor.NudgeDeliveryFile
	r.cfg.NudgeDir = t.TempDir()
	r.rep.period = time.Hour
	runUntil(t, r, p, has(protocol.ConditionFinished))

	got, _ := p.conditions()
	if c, ok := got[protocol.ConditionTripped]; ok {
		t.Fatalf("tripped: %s %s", c.Reason, c.Message)
	}
	var sum protocol.Summary
	if err := json.Unmarshal([]byte(got[protocol.ConditionFinished].Message), &sum); err != nil || !sum.Result || sum.Steps != 100 {
		t.Fatalf("Finished %s: want the result after 100 steps", got[protocol.ConditionFinished].Message)
	}
	c := got[protocol.ConditionWouldTrip]
	ws := protocol.ParseWouldTrips(c.Message)
	if c.Reason != protocol.ReasonWouldTrip || len(ws) != 1 || ws[0].Detector != monitor.DetectorIdenticalCalls || ws[0].Count != 25 ||
		ws[0].Step != 4 || ws[0].Class != monitor.ClassRunaway || ws[0].Time.IsZero() {
		t.Fatalf("WouldTrip %s/%s: want identicalCalls 25 times, first at step 4", c.Reason, c.Message)
	}
	if len(sum.WouldTrips) != 1 || sum.WouldTrips[0] != ws[0] {
		t.Errorf("the summary lists %+v, want the condition's %+v", sum.WouldTrips, ws)
	}
	if n := wouldWrites(t, p.p.bodies); n != 2 {
		t.Errorf("%d writes carried WouldTrip, want 2 (the first would-trip, the end)", n)
	}
	if _, ok := got[protocol.ConditionSilent]; !ok {
		t.Error("no silent-run nudge: nudges must still be said")
	}
	if recs, _ := os.ReadFile(filepath.Join(r.cfg.NudgeDir, nudgefile.File)); len(nudgefile.Parse(recs)) == 0 {
		t.Error("no nudge delivered to the agent")
	}
	verdicts, _ := os.ReadFile(filepath.Join(r.cfg.NudgeDir, nudgefile.VerdictFile))
	if strings.Contains(string(verdicts), `"refuse":true`) || !strings.Contains(string(verdicts), `"call"`) {
		t.Fatalf("the hook's verdicts refuse an audited call, or there are none:\n%s", verdicts)
	}
}

// wouldWrites counts the patches that carried ConditionWouldTrip.
func wouldWrites(t *testing.T, bodies []string) int {
	t.Helper()
	n := 0
	for _, b := range bodies {
		var patch struct {
			Status struct{ Conditions []condition }
		}
		if err := json.Unmarshal([]byte(b), &patch); err != nil {
			t.Fatal(err)
		}
		for _, c := range patch.Status.Conditions {
			if c.Type == protocol.ConditionWouldTrip {
				n++
			}
		}
	}
	return n
}

// With a period that has passed, the counts go out with the next look;
// a restarted sidecar replaying the stream writes nothing again.
func TestRunAuditedCountsAndRestart(t *testing.T) {
	lines := recorded(t, "../test/fakeagent/scenarios/claude/identicalLoop.log")
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, &scriptedSource{lines: lines}, p, clock.RealClock{})
	r.cfg.Audit = []string{monitor.DetectorIdenticalCalls}
	runUntil(t, r, p, has(protocol.ConditionFinished))
	_, writes := p.conditions()
	if n := wouldWrites(t, p.p.bodies); n < 3 {
		t.Errorf("%d writes carried WouldTrip: with no period the counts go out as they move", n)
	}
	r2 := testRunner(t, &scriptedSource{lines: lines}, p, clock.RealClock{})
	r2.cfg.Audit = r.cfg.Audit
	ctx, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stop()
	if err := r2.run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, again := p.conditions(); again != writes {
		t.Fatalf("the restarted sidecar wrote %d times", again-writes)
	}
}

// On each real CLI's identical loop with identicalCalls audited, the
// sidecar lets every call through: no refusal, no closing line.
func TestJudgeCallsAudited(t *testing.T) {
	for _, format := range agents.Formats() {
		t.Run(format, func(t *testing.T) {
			_, eng, vs := judgeRealLoop(t, format, []string{monitor.DetectorIdenticalCalls})
			if len(vs) != 4 || eng.WouldTripCount() != 1 {
				t.Fatalf("verdicts %+v, %d would-trips: want 4 calls judged and one would-trip", vs, eng.WouldTripCount())
			}
			for _, v := range vs {
				if v.Refuse || v.Call == nudgefile.CallAll {
					t.Errorf("verdict %+v refuses", v)
				}
			}
		})
	}
}
