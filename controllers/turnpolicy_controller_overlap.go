package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// overlapMessage names the policies of one kind that apply to some of the
// same runs, oldest first, and whose guards win: the oldest's, field by
// field (docs/policies.md#precedence). ps are ordered as orderPolicies
// orders them (newest first within a kind). ok is false when there is one
// policy alone.
func overlapMessage(ps []appliedPolicy) (msg string, ok bool) {
	if len(ps) < 2 {
		return "", false
	}
	names := make([]string, 0, len(ps))
	for i := len(ps) - 1; i >= 0; i-- {
		names = append(names, ps[i].Source)
	}
	return fmt.Sprintf("%s apply to the same runs: the oldest, %s, wins each field it sets, then the next oldest; the limits of every one hold",
		strings.Join(names, ", "), names[0]), true
}

// setOverlapping sets the Overlapping condition.
func setOverlapping(st *twv1.TurnPolicyStatus, msg string, ok bool) {
	c := metav1.Condition{Type: twv1.PolicyConditionOverlapping, Status: metav1.ConditionFalse,
		Reason: ReasonNoOverlap, Message: "no other policy of this kind applies to these runs", ObservedGeneration: st.ObservedGeneration}
	if ok {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonPoliciesOverlap, msg
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// clusterPeers are the ClusterTurnPolicies that select at least one of the
// namespaces self selects (self included), as orderPolicies orders them:
// one pass over the namespaces, so it stays cheap.
func clusterPeers(self *twv1.ClusterTurnPolicy, all []twv1.ClusterTurnPolicy, namespaces []corev1.Namespace) []appliedPolicy {
	var mine []corev1.Namespace
	for _, ns := range namespaces {
		if selects(self.Spec.NamespaceSelector, ns.Labels) {
			mine = append(mine, ns)
		}
	}
	var peers []twv1.ClusterTurnPolicy
	for _, p := range all {
		if p.UID == self.UID || sharesNamespace(&p, mine) {
			peers = append(peers, p)
		}
	}
	out := make([]appliedPolicy, 0, len(peers))
	for i := range byAgeNewestFirst(peers) {
		p := &peers[i]
		out = append(out, appliedPolicy{Source: KindClusterTurnPolicy + "/" + p.Name, Spec: &p.Spec.TurnPolicySpec, Object: p})
	}
	return out
}

func sharesNamespace(p *twv1.ClusterTurnPolicy, namespaces []corev1.Namespace) bool {
	for _, ns := range namespaces {
		if selects(p.Spec.NamespaceSelector, ns.Labels) {
			return true
		}
	}
	return false
}
