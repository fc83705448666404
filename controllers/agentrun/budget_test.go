package agentrun

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestBudgetHold(t *testing.T) {
	msg := budgetHoldMessage("TurnPolicy/team", "spent 2.00 of 1.00 USD", 1)
	if err := containsAll(msg, "reroll (attempt 1)", "TurnPolicy/team", "spent 2.00 of 1.00 USD"); err != nil {
		t.Error(err)
	}
	st := &twv1.AgentRunStatus{Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reasonPending, Message: "no turn yet"}}}
	setBudgetHold(st, Decision{Step: StepHold, Why: msg})
	c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionBudgetExhausted)
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != msg || !strings.Contains(meta.FindStatusCondition(st.Conditions, ConditionReady).Message, "TurnPolicy/team") {
		t.Errorf("conditions %v", st.Conditions)
	}
	setBudgetHold(st, Decision{Step: StepCreate})
	if meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionBudgetExhausted) != nil {
		t.Error("the hold stays after it ended")
	}
}
