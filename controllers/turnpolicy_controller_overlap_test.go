package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

func TestOverlapMessage(t *testing.T) {
	local := []twv1.TurnPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "new", CreationTimestamp: metav1.NewTime(t0.Add(time.Hour))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "old", CreationTimestamp: metav1.NewTime(t0)}},
	}
	msg, ok := turnpolicy.OverlapMessage(turnpolicy.OrderPolicies(nil, local, nil))
	if !ok {
		t.Fatal("two policies in one namespace overlap")
	}
	if err := containsAll(msg, "TurnPolicy/old, TurnPolicy/new apply", "the oldest, TurnPolicy/old, wins"); err != nil {
		t.Error(err)
	}
	if _, ok := turnpolicy.OverlapMessage(turnpolicy.OrderPolicies(nil, local[:1], nil)); ok {
		t.Error("one policy alone overlaps")
	}
	st := &twv1.TurnPolicyStatus{}
	turnpolicy.SetOverlapping(st, msg, true)
	if c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionOverlapping); c == nil || c.Status != metav1.ConditionTrue || c.Message != msg {
		t.Errorf("condition %v", c)
	}
	turnpolicy.SetOverlapping(st, "", false)
	if c := meta.FindStatusCondition(st.Conditions, twv1.PolicyConditionOverlapping); c.Status != metav1.ConditionFalse || c.Reason != turnpolicy.ReasonNoOverlap {
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
		got := turnpolicy.ClusterPeers(self, append([]twv1.ClusterTurnPolicy(nil), all...), nss)
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

// Every policy a change concerns shows the right Overlapping, with a
// manager running (its watches decide which policies are reconciled):
// when B comes to apply to A's runs both say True, the older A (the one
// that wins) included; once B is deleted, A says False again. For both
// kinds.
func TestOverlappingEveryPolicy(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	team := "team-" + ns
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"turnwatch.dev/test-team": team}
	if err := k8s.Update(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	startManager(t, ns, managerOpts{})
	sel := &metav1.LabelSelector{MatchLabels: nsObj.Labels}

	kinds := []struct {
		kind string
		make func(name string) client.Object
	}{
		{turnpolicy.KindTurnPolicy, func(name string) client.Object {
			return &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		}},
		{turnpolicy.KindClusterTurnPolicy, func(name string) client.Object {
			return &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: team + "-" + name}, Spec: twv1.ClusterTurnPolicySpec{NamespaceSelector: sel}}
		}},
	}
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			a, b := k.make("a"), k.make("b")
			create(t, a)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), a) })
			eventually(t, "A alone", overlapIs(a, metav1.ConditionFalse, turnpolicy.ReasonNoOverlap))
			create(t, b)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), b) })
			names := k.kind + "/" + a.GetName() + ", " + k.kind + "/" + b.GetName() + " apply"
			winner := "the oldest, " + k.kind + "/" + a.GetName() + ", wins"
			for _, p := range []client.Object{a, b} {
				eventually(t, p.GetName()+" overlaps", overlapIs(p, metav1.ConditionTrue, turnpolicy.ReasonPoliciesOverlap, names, winner))
			}
			if err := k8s.Delete(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			eventually(t, "A, the survivor, alone again", overlapIs(a, metav1.ConditionFalse, turnpolicy.ReasonNoOverlap, "no other policy of this kind applies"))
		})
	}
}

// overlapIs checks a policy's Overlapping condition, as the API server has
// it.
func overlapIs(p client.Object, status metav1.ConditionStatus, reason string, parts ...string) func() error {
	return func() error {
		got := p.DeepCopyObject().(client.Object)
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		var conds []metav1.Condition
		switch g := got.(type) {
		case *twv1.TurnPolicy:
			conds = g.Status.Conditions
		case *twv1.ClusterTurnPolicy:
			conds = g.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, twv1.PolicyConditionOverlapping)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s: Overlapping %+v, want %s %s", p.GetName(), c, status, reason)
		}
		return containsAll(c.Message, parts...)
	}
}
