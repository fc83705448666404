package shared

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A running turn counts with its sidecar's report when that is ahead; a
// settled turn, a report of another turn, or one behind count for nothing.
func TestLiveCounts(t *testing.T) {
	running := twv1.TurnRef{Name: "r-1", Steps: 2, CostUSD: "0.1"}
	settled := twv1.TurnRef{Name: "r-1", Outcome: twv1.TurnSucceeded, Steps: 2, CostUSD: "0.1"}
	report := func(turn string, steps int64, cost string) *twv1.RunProgress {
		return &twv1.RunProgress{Turn: turn, Steps: steps, CostUSD: cost}
	}
	cases := []struct {
		name  string
		ref   twv1.TurnRef
		p     *twv1.RunProgress
		steps int64
		cost  string
	}{
		{"no report", running, nil, 2, "0.1"},
		{"its report, ahead", running, report("r-1", 5, "0.3"), 5, "0.3"},
		{"its report, behind", running, report("r-1", 1, "0.05"), 2, "0.1"},
		{"its report, fewer steps but more cost", running, report("r-1", 1, "0.3"), 2, "0.1"},
		{"another turn's report", running, report("r-0", 9, "1"), 2, "0.1"},
		{"settled: its own figures", settled, report("r-1", 9, "1"), 2, "0.1"},
	}
	for _, c := range cases {
		if got := LiveCounts(c.ref, c.p); got != counts(c.steps, c.cost) {
			t.Errorf("%s: %d %s, want %d %s", c.name, got.Steps, got.CostUSD(), c.steps, c.cost)
		}
	}
}

// The write memo ignores what a sidecar's report changes, and nothing else.
func TestMemoStatus(t *testing.T) {
	st := twv1.AgentRunStatus{Phase: twv1.RunRunning, Steps: 3, CostUSD: "0.2"}
	reported := st
	reported.Steps, reported.CostUSD, reported.Progress = 9, "0.5", &twv1.RunProgress{Turn: "r-0", Steps: 9}
	if !equality.Semantic.DeepEqual(MemoStatus(st), MemoStatus(reported)) {
		t.Error("a report makes the cached copy look unlike the controller's write")
	}
	reported.Phase = twv1.RunFaulted
	if equality.Semantic.DeepEqual(MemoStatus(st), MemoStatus(reported)) {
		t.Error("a phase change is hidden from the memo")
	}
}

func TestProgressPeriod(t *testing.T) {
	for _, c := range []struct {
		freshness time.Duration
		want      string
	}{
		{time.Minute, "55"},
		{100 * time.Second, "95"},
		{5 * time.Second, "1"},
		{2 * time.Second, "1"},
	} {
		if got := ProgressEnv(c.freshness); got.Name != protocol.EnvProgressPeriod || got.Value != c.want {
			t.Errorf("freshness %s: %s=%s, want %s", c.freshness, got.Name, got.Value, c.want)
		}
	}
}

func TestCountsOnly(t *testing.T) {
	base := twv1.AgentTurnStatus{PodName: "p", Steps: 3, CostUSD: "0.1"}
	for _, c := range []struct {
		name string
		edit func(*twv1.AgentTurnStatus)
		want bool
	}{
		{"steps", func(s *twv1.AgentTurnStatus) { s.Steps = 4 }, true},
		{"cost", func(s *twv1.AgentTurnStatus) { s.CostUSD = "0.2" }, true},
		{"nudge too", func(s *twv1.AgentTurnStatus) { s.Steps, s.Nudges = 4, 1 }, false},
		{"outcome too", func(s *twv1.AgentTurnStatus) { s.Steps, s.Outcome = 4, twv1.TurnFailed }, false},
	} {
		next := base
		c.edit(&next)
		if got := CountsOnly(base, next); got != c.want {
			t.Errorf("%s: countsOnly = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCountsAhead(t *testing.T) {
	st := twv1.AgentTurnStatus{Steps: 3, CostUSD: "0.10"}
	for _, c := range []struct {
		steps int64
		cost  string
		want  bool
	}{
		{3, "0.1", true},
		{4, "0.2", true},
		{2, "0.2", false},
		{4, "0.05", false},
		{4, "lots", false}, // a report whose cost is not a decimal is dropped
	} {
		p, err := protocol.ParseProgress(c.steps, c.cost)
		if got := err == nil && CountsAhead(p, st); got != c.want {
			t.Errorf("%d %s over %+v: %v, want %v", c.steps, c.cost, st, got, c.want)
		}
	}
}

func TestCountsThrottle(t *testing.T) {
	var c CountsThrottle
	uid, t0 := types.UID("u"), time.Unix(1000, 0)
	st := func(steps int64, cost string) *twv1.AgentTurnStatus {
		return &twv1.AgentTurnStatus{Steps: steps, CostUSD: cost}
	}
	if w := c.Hold(uid, st(1, "0.1"), t0, time.Minute); w != 0 {
		t.Fatalf("first write held %s", w)
	}
	if w := c.Hold(uid, st(5, "0.5"), t0.Add(20*time.Second), time.Minute); w != 40*time.Second {
		t.Fatalf("second write within the period: held %s, want 40s", w)
	}
	settled := st(3, "0.3") // a settle path that did not read the Pod
	c.Settle(uid, settled)
	if settled.Steps != 5 || settled.CostUSD != "0.50" {
		t.Fatalf("settled with %+v, want the held 5 steps", settled)
	}
	if w := c.Hold(uid, st(6, "0.6"), t0.Add(30*time.Second), time.Minute); w != 0 {
		t.Fatalf("a forgotten turn held %s", w)
	}
	if w := c.Hold(uid, st(7, "0.7"), t0.Add(90*time.Second), time.Minute); w != 0 {
		t.Fatalf("write after the period held %s", w)
	}
	final := st(9, "0.9") // the final summary is ahead of anything held
	c.Settle(uid, final)
	if final.Steps != 9 {
		t.Fatalf("settle lowered the counts: %+v", final)
	}
}
