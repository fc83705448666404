package turnpolicy

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// The ledger of a policy's budget (docs/policies.md#the-ledger): pure
// functions over its status, which the policy controller writes once per
// pass.

// Reasons of a policy's conditions.
const (
	// ReasonBudgetExhausted: the window's spend is past spec.budget.maxCostUSD.
	ReasonBudgetExhausted = "BudgetExhausted"
	// reasonWithinBudget: the window's spend is within the budget.
	reasonWithinBudget = "WithinBudget"
	// ReasonPoliciesOverlap: another policy of the same kind applies to
	// some of the same runs.
	ReasonPoliciesOverlap = "PoliciesOverlap"
	// ReasonNoOverlap: no other policy of the same kind applies.
	ReasonNoOverlap = "NoOverlap"
)

// settledTurn is a turn to count: read live, holding the budget
// finalizer, settled (or deleted with no run left to settle it), and not in
// the ledger's counting list.
type settledTurn struct {
	UID  types.UID
	Name string // namespace/name
	// Cost is the turn's own cost.
	Cost monitor.Money
	// At is when it settled: its completionTime (or, for a turn deleted
	// unsettled, its deletion time).
	At time.Time
}

// windowOf reads spec.budget.window.
func windowOf(b *twv1.Budget) (time.Duration, error) {
	d, err := time.ParseDuration(b.Window)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("window %q is not a positive duration", b.Window)
	}
	return d, nil
}

// rollWindow starts the first window at now and moves the window on by
// whole windows once now reaches its end; a new window starts with nothing
// settled. Counting is kept: its turns are counted, whatever the window.
// It says whether the window moved.
func rollWindow(st *twv1.BudgetStatus, window time.Duration, now time.Time) bool {
	if st.WindowStart == nil {
		// Whole seconds, as the API server keeps it: the same window
		// before and after the write.
		st.WindowStart = shared.PtrTime(metav1.NewTime(now.Truncate(time.Second)))
		st.SettledUSD, st.Turns = monitor.Money(0).String(), 0
		return true
	}
	start := st.WindowStart.Time
	if now.Before(start.Add(window)) {
		return false
	}
	n := now.Sub(start) / window
	st.WindowStart = shared.PtrTime(metav1.NewTime(start.Add(n * window)))
	st.SettledUSD, st.Turns = monitor.Money(0).String(), 0
	return true
}

// windowLeft is how long the current window has to run.
func windowLeft(st *twv1.BudgetStatus, window time.Duration, now time.Time) time.Duration {
	if st.WindowStart == nil {
		return window
	}
	return max(time.Second, st.WindowStart.Add(window).Sub(now))
}

// countTurns adds each turn to counting and, when it settled in the
// current window, its cost to settledUSD: a turn of a past window counts
// nothing. A drill's turn counts like any (a drill is a run). A turn
// already listed is skipped.
func countTurns(st *twv1.BudgetStatus, turns []settledTurn) {
	settled, _ := shared.ParseUSD(st.SettledUSD)
	for _, t := range turns {
		if counted(st, t.UID) {
			continue
		}
		cost := monitor.Money(0)
		if st.WindowStart != nil && !t.At.Before(st.WindowStart.Time) {
			cost = t.Cost
			settled = settled.Add(cost)
			st.Turns++
		}
		st.Counting = append(st.Counting, twv1.CountedTurn{UID: t.UID, Name: t.Name, CostUSD: cost.String()})
	}
	st.SettledUSD = settled.String()
}

// counted says whether the ledger lists the turn.
func counted(st *twv1.BudgetStatus, uid types.UID) bool {
	return slices.ContainsFunc(st.Counting, func(c twv1.CountedTurn) bool { return c.UID == uid })
}

// releaseCounted drops the entries whose turn no longer holds the budget
// finalizer, or is gone: it can never be counted again.
func releaseCounted(st *twv1.BudgetStatus, released map[types.UID]bool) {
	st.Counting = slices.DeleteFunc(st.Counting, func(c twv1.CountedTurn) bool { return released[c.UID] })
	if len(st.Counting) == 0 {
		st.Counting = nil
	}
}

// setSpent sets spentUSD to settled plus the running turns' cost.
func setSpent(st *twv1.BudgetStatus, running monitor.Money) {
	settled, _ := shared.ParseUSD(st.SettledUSD)
	st.SpentUSD = settled.Add(running).String()
}

// keptRunning is the running part of the spend as last written.
func keptRunning(st *twv1.BudgetStatus) monitor.Money {
	spent, _ := shared.ParseUSD(st.SpentUSD)
	settled, _ := shared.ParseUSD(st.SettledUSD)
	return max(0, spent-settled)
}

// overBudget says whether the ledger's spend is past the budget, and the
// figures.
func overBudget(b *twv1.Budget, st *twv1.BudgetStatus) (bool, string) {
	limit, err := shared.ParseUSD(b.MaxCostUSD)
	if err != nil {
		return false, ""
	}
	spent, _ := shared.ParseUSD(st.SpentUSD)
	since := ""
	if st.WindowStart != nil {
		since = st.WindowStart.UTC().Format(time.RFC3339)
	}
	turns := "turns"
	if st.Turns == 1 {
		turns = "turn"
	}
	msg := fmt.Sprintf("spent %s of %s USD in the %s window since %s (%s settled in %d %s)",
		spent, limit, b.Window, since, st.SettledUSD, st.Turns, turns)
	return spent > limit, msg
}

// setBudgetExhausted sets the BudgetExhausted condition from the ledger;
// without a budget there is none.
func setBudgetExhausted(st *twv1.TurnPolicyStatus, b *twv1.Budget) {
	if b == nil || st.Budget == nil {
		meta.RemoveStatusCondition(&st.Conditions, twv1.PolicyConditionBudgetExhausted)
		return
	}
	over, msg := overBudget(b, st.Budget)
	c := metav1.Condition{Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionFalse,
		Reason: reasonWithinBudget, Message: msg, ObservedGeneration: st.ObservedGeneration}
	if over {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonBudgetExhausted
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// ExhaustedBudget is the first policy (in the order given) whose budget is
// exhausted by its status condition, and the condition's message.
func ExhaustedBudget(pols []AppliedPolicy) (source, msg string, ok bool) {
	for _, p := range pols {
		if p.Spec.Budget == nil {
			continue
		}
		if c := meta.FindStatusCondition(p.Status().Conditions, twv1.PolicyConditionBudgetExhausted); c != nil && c.Status == metav1.ConditionTrue {
			return p.Source, c.Message, true
		}
	}
	return "", "", false
}

// BudgetStop is the error a running turn is stopped with when a budget of
// pols is exhausted (docs/policies.md#budgets), or nil.
func BudgetStop(pols []AppliedPolicy) *twv1.TurnError {
	source, figures, ok := ExhaustedBudget(pols)
	if !ok {
		return nil
	}
	return &twv1.TurnError{Type: twv1.ClassOverspend, Detector: twv1.DetectorBudget,
		Message: fmt.Sprintf("the budget of %s is exhausted: %s", source, figures)}
}

// AnyBudget says whether some policy has a budget.
func AnyBudget(pols []AppliedPolicy) bool {
	return slices.ContainsFunc(pols, func(p AppliedPolicy) bool { return p.Spec.Budget != nil })
}

// BudgetLeft is what the budgets of pols have left in their windows, the
// least of them, as their ledgers last said (spec.budget.maxCostUSD less
// status.budget.spentUSD, never below 0), and the policy whose it is
// ("TurnPolicy/NAME"); ok is false when none has a budget. A turn's gateway refuses its next model request once the turn
// spent it (docs/gateway.md): a snapshot taken when its Pod is rendered,
// which the turns running beside it share, so the controller's stop of
// every running turn once a budget is exhausted stays the backstop.
func BudgetLeft(pols []AppliedPolicy) (left monitor.Money, source string, ok bool) {
	for _, p := range pols {
		b := p.Spec.Budget
		if b == nil {
			continue
		}
		limit, err := shared.ParseUSD(b.MaxCostUSD)
		if err != nil {
			continue
		}
		var spent monitor.Money
		if st := p.Status(); st != nil && st.Budget != nil {
			spent, _ = shared.ParseUSD(st.Budget.SpentUSD)
		}
		l := max(0, limit-spent)
		if !ok || l < left {
			left, source, ok = l, p.Source, true
		}
	}
	return left, source, ok
}
