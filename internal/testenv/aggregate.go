package testenv

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AggregateClusterRole fills the rules of an aggregated ClusterRole (the
// built-in admin, edit, view), as the controller manager's
// clusterrole-aggregation controller does on a cluster: the union of the
// rules of every ClusterRole its aggregationRule selects, those aggregated
// first. envtest runs no controller manager, so there the built-in edit
// role holds no rules until this runs. Idempotent.
func AggregateClusterRole(ctx context.Context, c client.Client, name string) error {
	return aggregate(ctx, c, name, map[string]bool{})
}

func aggregate(ctx context.Context, c client.Client, name string, seen map[string]bool) error {
	if seen[name] {
		return nil
	}
	seen[name] = true
	role := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	var all rbacv1.ClusterRoleList
	if err := c.List(ctx, &all); err != nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return fmt.Errorf("ClusterRole %s: %w", name, err)
		}
		for _, r := range all.Items {
			if r.Name == name || !s.Matches(labels.Set(r.Labels)) {
				continue
			}
			if err := aggregate(ctx, c, r.Name, seen); err != nil {
				return err
			}
			got := &rbacv1.ClusterRole{}
			if err := c.Get(ctx, client.ObjectKey{Name: r.Name}, got); err != nil {
				return err
			}
			for _, rule := range got.Rules {
				if !containsRule(rules, rule) {
					rules = append(rules, rule)
				}
			}
		}
	}
	if apiequality.Semantic.DeepEqual(role.Rules, rules) {
		return nil
	}
	role.Rules = rules
	return c.Update(ctx, role)
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if apiequality.Semantic.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
