package controllers

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// CacheByObject narrows the manager's informers to what turnwatch made, so
// that the operator does not hold every Pod and ServiceAccount of the
// cluster in memory: Pods with a turnwatch.dev/run label, and the sidecar's
// ServiceAccounts and RoleBindings (labelled turnwatch.dev/component). Each
// kind is trimmed before it is stored (shared/cache_trim.go).
func CacheByObject() map[client.Object]cache.ByObject {
	hasRun, _ := labels.NewRequirement(twv1.LabelRun, selection.Exists, nil)
	ours := labels.SelectorFromSet(labels.Set{agentturn.LabelComponent: agentturn.ComponentSidecarRBAC})
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:            {Label: labels.NewSelector().Add(*hasRun), Transform: shared.TrimPod},
		&corev1.ServiceAccount{}: {Label: ours, Transform: shared.StripManagedFields},
		&rbacv1.RoleBinding{}:    {Label: ours, Transform: shared.StripManagedFields},
		&twv1.AgentRun{}:         {Transform: shared.TrimRun},
		&twv1.AgentTurn{}:        {Transform: shared.TrimTurn},
		&corev1.Namespace{}:      {Transform: shared.StripManagedFields},
		// The attach policy's parameters only (controllers/attachns).
		&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", twv1.AttachParams), Transform: shared.StripManagedFields},
	}
}
