package turnpolicy

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

func TestRollWindow(t *testing.T) {
	start := metav1.NewTime(t0)
	for _, tc := range []struct {
		name      string
		st        twv1.BudgetStatus
		now       time.Time
		rolled    bool
		start     time.Time
		settled   string
		counting  int
		turnsLeft int64
	}{
		{"first seen starts the window", twv1.BudgetStatus{}, t0.Add(time.Minute), true, t0.Add(time.Minute), "0.00", 0, 0},
		{"inside the window nothing moves", twv1.BudgetStatus{WindowStart: &start, SettledUSD: "3.00", Turns: 2},
			t0.Add(59 * time.Minute), false, t0, "3.00", 0, 2},
		{"at the end it rolls", twv1.BudgetStatus{WindowStart: &start, SettledUSD: "3.00", Turns: 2},
			t0.Add(time.Hour), true, t0.Add(time.Hour), "0.00", 0, 0},
		{"by whole windows, counting kept", twv1.BudgetStatus{WindowStart: &start, SettledUSD: "3.00", Turns: 2,
			Counting: []twv1.CountedTurn{{UID: "a", Name: "ns/a", CostUSD: "3.00"}}},
			t0.Add(3*time.Hour + 10*time.Minute), true, t0.Add(3 * time.Hour), "0.00", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st.DeepCopy()
			if got := rollWindow(st, time.Hour, tc.now); got != tc.rolled {
				t.Errorf("rolled = %v, want %v", got, tc.rolled)
			}
			if !st.WindowStart.Time.Equal(tc.start) || st.SettledUSD != tc.settled || len(st.Counting) != tc.counting || st.Turns != tc.turnsLeft {
				t.Errorf("got start %v settled %s counting %d turns %d", st.WindowStart, st.SettledUSD, len(st.Counting), st.Turns)
			}
		})
	}
}

func TestWindowLeft(t *testing.T) {
	start := metav1.NewTime(t0)
	st := &twv1.BudgetStatus{WindowStart: &start}
	if got := windowLeft(st, time.Hour, t0.Add(20*time.Minute)); got != 40*time.Minute {
		t.Errorf("windowLeft = %v, want 40m", got)
	}
	if got := windowLeft(&twv1.BudgetStatus{}, time.Hour, t0); got != time.Hour {
		t.Errorf("windowLeft without a start = %v", got)
	}
}

func TestCountTurns(t *testing.T) {
	start := metav1.NewTime(t0)
	st := &twv1.BudgetStatus{WindowStart: &start, SettledUSD: "1.00", Turns: 1,
		Counting: []twv1.CountedTurn{{UID: "old", Name: "ns/old", CostUSD: "1.00"}}}
	countTurns(st, []settledTurn{
		{UID: "a", Name: "ns/a", Cost: usd("0.25"), At: t0.Add(time.Minute)},
		{UID: "old", Name: "ns/old", Cost: usd("1.00"), At: t0.Add(time.Minute)}, // listed: skipped
		{UID: "past", Name: "ns/past", Cost: usd("9.00"), At: t0.Add(-time.Minute)},
		{UID: "drill", Name: "ns/drill", Cost: usd("0.07"), At: t0.Add(time.Minute)}, // a drill is a run
		{UID: "a", Name: "ns/a", Cost: usd("0.25"), At: t0.Add(time.Minute)},         // twice in one pass
	})
	if st.SettledUSD != "1.32" || st.Turns != 3 {
		t.Errorf("settled %s in %d turns, want 1.32 in 3", st.SettledUSD, st.Turns)
	}
	want := map[types.UID]string{"old": "1.00", "a": "0.25", "past": "0.00", "drill": "0.07"}
	if len(st.Counting) != len(want) {
		t.Fatalf("counting = %v", st.Counting)
	}
	for _, c := range st.Counting {
		if want[c.UID] != c.CostUSD {
			t.Errorf("%s counted %s, want %s", c.UID, c.CostUSD, want[c.UID])
		}
	}
}

func TestReleaseCounted(t *testing.T) {
	st := &twv1.BudgetStatus{Counting: []twv1.CountedTurn{{UID: "a"}, {UID: "b"}}}
	releaseCounted(st, map[types.UID]bool{"a": true})
	if len(st.Counting) != 1 || st.Counting[0].UID != "b" {
		t.Errorf("counting = %v", st.Counting)
	}
	releaseCounted(st, map[types.UID]bool{"b": true})
	if st.Counting != nil {
		t.Errorf("counting = %v, want nil", st.Counting)
	}
}

func TestSpentAndKept(t *testing.T) {
	st := &twv1.BudgetStatus{SettledUSD: "1.20"}
	setSpent(st, usd("0.30"))
	if st.SpentUSD != "1.50" || keptRunning(st) != usd("0.30") {
		t.Errorf("spent %s kept %s", st.SpentUSD, keptRunning(st))
	}
}

func TestSetBudgetExhausted(t *testing.T) {
	start := metav1.NewTime(t0)
	b := &twv1.Budget{MaxCostUSD: "1", Window: "24h"}
	for _, tc := range []struct {
		spent  string
		status metav1.ConditionStatus
	}{{"0.99", metav1.ConditionFalse}, {"1.00", metav1.ConditionFalse}, {"1.01", metav1.ConditionTrue}} {
		st := &twv1.TurnPolicyStatus{Budget: &twv1.BudgetStatus{WindowStart: &start, SpentUSD: tc.spent, SettledUSD: tc.spent, Turns: 3}}
		setBudgetExhausted(st, b)
		c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionBudgetExhausted)
		if c == nil || c.Status != tc.status {
			t.Fatalf("spent %s: condition %v, want %s", tc.spent, c, tc.status)
		}
		if err := containsAll(c.Message, "spent "+tc.spent+" of 1.00 USD", "24h window since 2026-12-01T06:00:00Z", "3 turns"); err != nil {
			t.Error(err)
		}
	}
	st := &twv1.TurnPolicyStatus{Conditions: []metav1.Condition{{Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue}}}
	setBudgetExhausted(st, nil)
	if len(st.Conditions) != 0 {
		t.Errorf("no budget kept %v", st.Conditions)
	}
}

func TestExhaustedBudget(t *testing.T) {
	exhausted := twv1.TurnPolicyStatus{Conditions: []metav1.Condition{{Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue, Message: "spent 2 of 1"}}}
	budget := &twv1.Budget{MaxCostUSD: "1", Window: "1h"}
	pols := []AppliedPolicy{
		{Source: "ClusterTurnPolicy/none", Spec: &twv1.TurnPolicySpec{}, Object: &twv1.ClusterTurnPolicy{Status: exhausted}},
		{Source: "TurnPolicy/ok", Spec: &twv1.TurnPolicySpec{Budget: budget}, Object: &twv1.TurnPolicy{}},
		{Source: "TurnPolicy/spent", Spec: &twv1.TurnPolicySpec{Budget: budget}, Object: &twv1.TurnPolicy{Status: exhausted}},
	}
	src, msg, ok := ExhaustedBudget(pols)
	if !ok || src != "TurnPolicy/spent" || msg != "spent 2 of 1" {
		t.Errorf("exhaustedBudget = %q %q %v", src, msg, ok)
	}
	if _, _, ok := ExhaustedBudget(pols[:2]); ok {
		t.Error("a policy without a budget holds nothing")
	}
	if !AnyBudget(pols) || AnyBudget(pols[:1]) {
		t.Error("anyBudget")
	}
}

func TestRunningSpend(t *testing.T) {
	running := func(name, turn, cost string, mutate ...func(*twv1.AgentRun)) twv1.AgentRun {
		r := twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Status: twv1.AgentRunStatus{Phase: twv1.RunRunning, Progress: &twv1.RunProgress{Turn: turn, RunUID: name, CostUSD: cost}}}
		for _, f := range mutate {
			f(&r)
		}
		return r
	}
	runs := []twv1.AgentRun{
		running("a", "a-0", "0.50"),
		running("b", "b-1", "0.25"),
		running("drill", "drill-0", "0.05", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "identicalLoop"} }),
		running("done", "done-0", "9.00", func(r *twv1.AgentRun) { r.Status.Phase = twv1.RunFaulted }),
		running("settled", "settled-0", "9.00"),
		running("listed", "listed-0", "9.00"),
		running("other", "other-0", "9.00", func(r *twv1.AgentRun) { r.Status.Progress.RunUID = "earlier" }),
	}
	turns := []twv1.AgentTurn{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settled-0", UID: "s"}, Status: twv1.AgentTurnStatus{Outcome: twv1.TurnFailed}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "listed-0", UID: "l"}},
		attached("pod-a", "", "0.10"),
		attached("pod-settled", twv1.TurnFailed, "9.00"),
		attached("pod-listed", "", "9.00"),
	}
	b := &twv1.BudgetStatus{Counting: []twv1.CountedTurn{{UID: "l"}, {UID: "pod-listed"}}}
	if got := runningSpend(runs, turns, b); got != usd("0.90") {
		t.Errorf("runningSpend = %s, want 0.90 (a drill counts, and a running attached Pod's turn)", got)
	}
}

// attached is an attached Pod's turn (no run) with its own counts.
func attached(name string, outcome twv1.TurnOutcome, cost string) twv1.AgentTurn {
	return twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec:   twv1.AgentTurnSpec{PodRef: &twv1.AttachedPod{Name: name, UID: name + "-uid"}},
		Status: twv1.AgentTurnStatus{Outcome: outcome, CostUSD: cost}}
}

// The least of the budgets' remainders; none without a budget.
func TestBudgetLeft(t *testing.T) {
	withBudget := func(name, limit, spent string) AppliedPolicy {
		p := &twv1.TurnPolicy{}
		p.Name = name
		p.Spec.Budget = &twv1.Budget{MaxCostUSD: limit, Window: "24h"}
		if spent != "" {
			p.Status.Budget = &twv1.BudgetStatus{SpentUSD: spent}
		}
		return AppliedPolicy{Source: "TurnPolicy/" + name, Spec: &p.Spec, Object: p}
	}
	none := AppliedPolicy{Source: "TurnPolicy/none", Spec: &twv1.TurnPolicySpec{}, Object: &twv1.TurnPolicy{}}
	for _, c := range []struct {
		name         string
		pols         []AppliedPolicy
		want, source string
		ok           bool
	}{
		{"no budget", []AppliedPolicy{none}, "0", "", false},
		{"fresh", []AppliedPolicy{withBudget("a", "10", "")}, "10", "TurnPolicy/a", true},
		{"the least", []AppliedPolicy{withBudget("a", "10", "2.5"), none, withBudget("b", "100", "95")}, "5", "TurnPolicy/b", true},
		{"spent past it", []AppliedPolicy{withBudget("a", "10", "12")}, "0", "TurnPolicy/a", true},
	} {
		left, source, ok := BudgetLeft(c.pols)
		if want, _ := monitor.ParseMoney(c.want); left != want || source != c.source || ok != c.ok {
			t.Errorf("%s: %s %s %v, want %s %s %v", c.name, left, source, ok, c.want, c.source, c.ok)
		}
	}
}
