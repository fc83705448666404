package controllers

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

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
