package agentturn

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The stream's own cost in the sidecar's summary is kept beside the
// metered cost; a summary without one leaves it absent.
func TestStreamCostKept(t *testing.T) {
	money := func(s string) monitor.Money {
		m, err := monitor.ParseMoney(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tripped := protocol.TripCondition("identicalCalls", "the same call 4 times")
	for _, c := range []struct {
		name string
		cond protocol.Condition
		want string
	}{
		{"metered", protocol.FinishedCondition(protocol.Summary{Progress: protocol.Progress{Steps: 3, Cost: money("0.75"), StreamCost: money("0.5")}, Result: true, StopReason: "end"}), "0.5"},
		{"not metered", protocol.FinishedCondition(protocol.Summary{Progress: protocol.Progress{Steps: 3, Cost: money("0.75")}, Result: true, StopReason: "end"}), ""},
		// A trip writes no summary: its progress carries the stream's figure.
		{"tripped", protocol.ProgressCondition(protocol.Progress{Steps: 4, Cost: money("0.75"), StreamCost: money("0.25")}), "0.25"},
	} {
		conds := []corev1.PodCondition{{Type: corev1.PodConditionType(c.cond.Type), Status: corev1.ConditionTrue, Reason: c.cond.Reason, Message: c.cond.Message}}
		if c.name == "tripped" {
			conds = append(conds, corev1.PodCondition{Type: corev1.PodConditionType(tripped.Type), Status: corev1.ConditionTrue, Reason: tripped.Reason, Message: tripped.Message})
		}
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: conds}}
		v := Judge(pod, "agent", time.Now(), time.Minute)
		st := &twv1.AgentTurnStatus{}
		SetTurnReports(st, v)
		if c.want == "" && st.StreamCostUSD != "" || c.want != "" && (st.StreamCostUSD == "" || money(st.StreamCostUSD) != money(c.want)) {
			t.Errorf("%s: streamCostUSD %q, want %q", c.name, st.StreamCostUSD, c.want)
		}
	}
}
