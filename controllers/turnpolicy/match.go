package turnpolicy

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// +kubebuilder:rbac:groups=turnwatch.dev,resources=turnpolicies;clusterturnpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch

// Policy kinds as a policy's source names them ("TurnPolicy/NAME").
const (
	KindTurnPolicy        = "TurnPolicy"
	KindClusterTurnPolicy = "ClusterTurnPolicy"
)

// AppliedPolicy is one policy that applies to the runs of a namespace,
// either kind.
type AppliedPolicy struct {
	// Source names it: "TurnPolicy/NAME" or "ClusterTurnPolicy/NAME".
	Source string
	// Spec is its spec (a ClusterTurnPolicy's without the selector).
	Spec *twv1.TurnPolicySpec
	// Object is the policy itself, for its status.
	Object client.Object
}

// Status is the policy's status.
func (p AppliedPolicy) Status() *twv1.TurnPolicyStatus {
	switch o := p.Object.(type) {
	case *twv1.TurnPolicy:
		return &o.Status
	case *twv1.ClusterTurnPolicy:
		return &o.Status
	}
	return nil
}

// PoliciesFor lists the policies that apply to the runs of namespace ns,
// lowest precedence first (orderPolicies).
func PoliciesFor(ctx context.Context, c client.Reader, ns string) ([]AppliedPolicy, error) {
	_, policies, err := NamespacePolicies(ctx, c, ns)
	return policies, err
}

// NamespacePolicies are namespace ns's labels and the policies that apply
// to its runs, lowest precedence first.
func NamespacePolicies(ctx context.Context, c client.Reader, ns string) (map[string]string, []AppliedPolicy, error) {
	var nsObj corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		return nil, nil, err
	}
	var cluster twv1.ClusterTurnPolicyList
	if err := c.List(ctx, &cluster); err != nil {
		return nil, nil, err
	}
	var local twv1.TurnPolicyList
	if err := c.List(ctx, &local, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	return nsObj.Labels, orderPolicies(cluster.Items, local.Items, nsObj.Labels), nil
}

// orderPolicies keeps the ClusterTurnPolicies whose selector matches a
// namespace with labels nsLabels, and orders them and the namespace's
// TurnPolicies lowest precedence first (docs/policies.md#precedence):
// cluster policies before namespace ones and, within a kind, the newest
// first, so that merging in order lets the oldest win each field. A
// selector that does not parse matches nothing.
func orderPolicies(cluster []twv1.ClusterTurnPolicy, local []twv1.TurnPolicy, nsLabels map[string]string) []AppliedPolicy {
	var out []AppliedPolicy
	for i := range byAgeNewestFirst(cluster) {
		p := &cluster[i]
		if !selects(p.Spec.NamespaceSelector, nsLabels) {
			continue
		}
		out = append(out, AppliedPolicy{Source: KindClusterTurnPolicy + "/" + p.Name, Spec: &p.Spec.TurnPolicySpec, Object: p})
	}
	for i := range byAgeNewestFirst(local) {
		p := &local[i]
		out = append(out, AppliedPolicy{Source: KindTurnPolicy + "/" + p.Name, Spec: &p.Spec, Object: p})
	}
	return out
}

// byAgeNewestFirst sorts policies newest first (a later name first among
// equals) and returns them.
func byAgeNewestFirst[T any, P interface {
	*T
	metav1.Object
}](ps []T) []T {
	slices.SortStableFunc(ps, func(a, b T) int {
		pa, pb := P(&a), P(&b)
		if c := pb.GetCreationTimestamp().Compare(pa.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return cmp.Compare(pb.GetName(), pa.GetName())
	})
	return ps
}

// selects says whether a namespace selector matches; nil or empty matches
// every namespace.
func selects(sel *metav1.LabelSelector, nsLabels map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(nsLabels))
}
