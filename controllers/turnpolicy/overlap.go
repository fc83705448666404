package turnpolicy

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// overlapMessage names the policies of one kind that apply to some of the
// same runs, oldest first, and whose guards win: the oldest's, field by
// field (docs/policies.md#precedence). ps are ordered as orderPolicies
// orders them (newest first within a kind). ok is false when there is one
// policy alone.
func overlapMessage(ps []AppliedPolicy) (msg string, ok bool) {
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
func clusterPeers(self *twv1.ClusterTurnPolicy, all []twv1.ClusterTurnPolicy, namespaces []corev1.Namespace) []AppliedPolicy {
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
	out := make([]AppliedPolicy, 0, len(peers))
	for i := range byAgeNewestFirst(peers) {
		p := &peers[i]
		out = append(out, AppliedPolicy{Source: KindClusterTurnPolicy + "/" + p.Name, Spec: &p.Spec.TurnPolicySpec, Object: p})
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

// The Overlapping condition of a policy depends on the other policies of
// its kind: when one is created, deleted or changes its spec (a
// ClusterTurnPolicy its selector), every other policy it applies (or
// applied) to the same runs as is reconciled too, so that all of them,
// the oldest (the one that wins) included, say so, and the survivor of a
// deletion says it is alone again.

// overlapPeers is the event handler that enqueues those other policies: on
// a create or a delete, those the object overlaps; on a spec change, those
// it overlapped before and those it overlaps after. A status write (a
// ledger pass) changes no overlap and enqueues nothing.
func (r *TurnPolicyReconciler) overlapPeers() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { r.enqueuePeers(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				r.enqueuePeers(ctx, q, e.ObjectOld)
				r.enqueuePeers(ctx, q, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { r.enqueuePeers(ctx, q, e.Object) },
	}
}

// enqueuePeers adds the other policies of obj's kind that apply to some of
// the same runs as obj.
func (r *TurnPolicyReconciler) enqueuePeers(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object) {
	for _, req := range r.peerRequests(ctx, obj) {
		q.Add(req)
	}
}

// peerRequests are the requests of the other policies of obj's kind that
// apply to some of the same runs: every other TurnPolicy of its namespace,
// or the ClusterTurnPolicies that select one of the namespaces it selects.
// A list that cannot be read enqueues nothing (the next change retries).
func (r *TurnPolicyReconciler) peerRequests(ctx context.Context, obj client.Object) []reconcile.Request {
	var peers []client.Object
	switch p := obj.(type) {
	case *twv1.TurnPolicy:
		var local twv1.TurnPolicyList
		if err := r.List(ctx, &local, client.InNamespace(p.Namespace)); err != nil {
			return nil
		}
		for i := range local.Items {
			peers = append(peers, &local.Items[i])
		}
	case *twv1.ClusterTurnPolicy:
		var all twv1.ClusterTurnPolicyList
		if err := r.List(ctx, &all); err != nil {
			return nil
		}
		var nss corev1.NamespaceList
		if err := r.List(ctx, &nss); err != nil {
			return nil
		}
		for _, ap := range clusterPeers(p, all.Items, nss.Items) {
			peers = append(peers, ap.Object)
		}
	}
	var reqs []reconcile.Request
	for _, peer := range peers {
		if peer.GetUID() != obj.GetUID() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(peer)})
		}
	}
	return reqs
}
