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
	for _, c := range []struct {
		name string
		sum  protocol.Summary
		want string
	}{
		{"metered", protocol.Summary{Progress: protocol.Progress{Steps: 3, Cost: money("0.75")}, Result: true, StopReason: "end", StreamCost: money("0.5")}, "0.5"},
		{"not metered", protocol.Summary{Progress: protocol.Progress{Steps: 3, Cost: money("0.75")}, Result: true, StopReason: "end"}, ""},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: protocol.ConditionFinished,
			Status: corev1.ConditionTrue, Reason: protocol.ReasonResult, Message: protocol.Marshal(c.sum)}}}}
		v := Judge(pod, "agent", time.Now(), time.Minute)
		st := &twv1.AgentTurnStatus{}
		setTurnReports(st, v)
		if c.want == "" && st.StreamCostUSD != "" || c.want != "" && (st.StreamCostUSD == "" || money(st.StreamCostUSD) != money(c.want)) {
			t.Errorf("%s: streamCostUSD %q, want %q", c.name, st.StreamCostUSD, c.want)
		}
	}
}
