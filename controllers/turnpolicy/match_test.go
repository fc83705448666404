package turnpolicy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestOrderPolicies(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	meta := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}
	}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	cluster := []twv1.ClusterTurnPolicy{
		{ObjectMeta: meta("old", 2*time.Hour)},
		{ObjectMeta: meta("other-team", time.Hour), Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}},
		{ObjectMeta: meta("new", time.Hour), Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: team}},
		{ObjectMeta: meta("bad", time.Hour), Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}}},
	}
	local := []twv1.TurnPolicy{
		{ObjectMeta: meta("b", time.Hour)},
		{ObjectMeta: meta("a", time.Hour)},
		{ObjectMeta: meta("oldest", 3*time.Hour)},
	}
	got := orderPolicies(cluster, local, map[string]string{"team": "a"})
	var names []string
	for _, p := range got {
		names = append(names, p.Source)
	}
	want := []string{
		"ClusterTurnPolicy/new", "ClusterTurnPolicy/old",
		"TurnPolicy/b", "TurnPolicy/a", "TurnPolicy/oldest",
	}
	if len(names) != len(want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got %v, want %v", names, want)
		}
	}
	if got[0].Status() == nil || got[4].Status() == nil {
		t.Error("Status() is nil for a policy")
	}
}
