package turnpolicy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestOverlapMessage(t *testing.T) {
	local := []twv1.TurnPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "new", CreationTimestamp: metav1.NewTime(t0.Add(time.Hour))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "old", CreationTimestamp: metav1.NewTime(t0)}},
	}
	msg, ok := overlapMessage(orderPolicies(nil, local, nil))
	if !ok {
		t.Fatal("two policies in one namespace overlap")
	}
	if err := containsAll(msg, "TurnPolicy/old, TurnPolicy/new apply", "the oldest, TurnPolicy/old, wins"); err != nil {
		t.Error(err)
	}
	if _, ok := overlapMessage(orderPolicies(nil, local[:1], nil)); ok {
		t.Error("one policy alone overlaps")
	}
	st := &twv1.TurnPolicyStatus{}
	setOverlapping(st, msg, true)
	if c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionOverlapping); c == nil || c.Status != metav1.ConditionTrue || c.Message != msg {
		t.Errorf("condition %v", c)
	}
	setOverlapping(st, "", false)
	if c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionOverlapping); c.Status != metav1.ConditionFalse || c.Reason != ReasonNoOverlap {
		t.Errorf("condition %v", c)
	}
}

func TestClusterPeers(t *testing.T) {
	sel := func(team string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}
	}
	ctp := func(name string, age time.Duration, s *metav1.LabelSelector) twv1.ClusterTurnPolicy {
		return twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0.Add(age))},
			Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: s}}
	}
	all := []twv1.ClusterTurnPolicy{
		ctp("a", 0, sel("a")), ctp("b", time.Hour, sel("b")), ctp("every", 2*time.Hour, nil), ctp("nowhere", 0, sel("none")),
	}
	nss := []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "ns-a", Labels: map[string]string{"team": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ns-b", Labels: map[string]string{"team": "b"}}},
	}
	for _, tc := range []struct {
		self string
		want []string
	}{
		{"a", []string{"ClusterTurnPolicy/every", "ClusterTurnPolicy/a"}},
		{"every", []string{"ClusterTurnPolicy/every", "ClusterTurnPolicy/b", "ClusterTurnPolicy/a"}},
		{"nowhere", []string{"ClusterTurnPolicy/nowhere"}},
	} {
		var self *twv1.ClusterTurnPolicy
		for i := range all {
			if all[i].Name == tc.self {
				self = all[i].DeepCopy()
			}
		}
		got := clusterPeers(self, append([]twv1.ClusterTurnPolicy(nil), all...), nss)
		var names []string
		for _, p := range got {
			names = append(names, p.Source)
		}
		if len(names) != len(tc.want) {
			t.Errorf("%s: peers %v, want %v", tc.self, names, tc.want)
			continue
		}
		for i := range names {
			if names[i] != tc.want[i] {
				t.Errorf("%s: peers %v, want %v", tc.self, names, tc.want)
			}
		}
	}
}
