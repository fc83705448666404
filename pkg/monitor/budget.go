package monitor

// DetectorBudget names the namespace's budget in reports, conditions and
// metrics (docs/design.md#budget); the manager names it too when it stops
// a running turn of a namespace whose budget is exhausted
// (docs/policies.md#budgets).
const DetectorBudget = "budget"

// budget trips overspend the moment the turn's cost is strictly above what
// the namespace's budgets had left when it started (a budget is exhausted
// while its spend is above it). No budget, no check. It weighs this turn's
// cost only: the earlier turns' are in the budgets' spend already.
func budget(s *State) (reason, message string, failed bool) {
	if s.Budget < 0 || s.Cost <= s.Budget {
		return "", "", false
	}
	whose := "the namespace's budgets"
	if s.BudgetName != "" {
		whose = "the budget of " + s.BudgetName
	}
	return DetectorBudget, "spent $" + s.Cost.String() + " this turn, over the $" + s.Budget.String() +
		" " + whose + " had left when it started", true
}

// budgetLeft is the budget the checks see for Options.BudgetLeftUSD
// (checked): negative for none; a budget already overspent has nothing
// left.
func budgetLeft(s string) Money {
	if s == "" {
		return -1
	}
	m, _ := ParseMoney(s)
	return max(m, 0)
}
