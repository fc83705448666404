package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// SidecarClusterRole holds the sidecar's rights (config/sidecar/clusterrole.yaml).
	// The manager binds it per namespace and holds `bind` on it alone.
	SidecarClusterRole = "turnwatch-sidecar"
	// LabelComponent marks what turnwatch makes outside the turn itself, so
	// that its cache sees only those and an uninstall can find them:
	// kubectl delete sa,rolebinding -A -l turnwatch.dev/component=sidecar-rbac
	LabelComponent = "turnwatch.dev/component"
	// ComponentSidecarRBAC is LabelComponent's value on the sidecar's
	// per-namespace ServiceAccount and RoleBinding.
	ComponentSidecarRBAC = "sidecar-rbac"
)

// sidecarRBAC are the ServiceAccount and RoleBinding a namespace needs
// before a turn's Pod can run there: the binding gives the account the
// turnwatch-sidecar ClusterRole in this namespace only. The manager, when
// known, is the binding's second subject, so that it may read a log tail
// here (identity.go) without pods/log anywhere else.
func sidecarRBAC(namespace string, manager *rbacv1.Subject) []client.Object {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: SidecarServiceAccount, Namespace: namespace,
			Labels: map[string]string{LabelComponent: ComponentSidecarRBAC},
		}
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(), AutomountServiceAccountToken: ptr.To(false)},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SidecarClusterRole},
			Subjects:   sidecarSubjects(namespace, manager),
		},
	}
}

func sidecarSubjects(namespace string, manager *rbacv1.Subject) []rbacv1.Subject {
	s := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: SidecarServiceAccount, Namespace: namespace}}
	if manager != nil {
		s = append(s, *manager)
	}
	return s
}

// ensureSidecarRBAC creates what is missing; it reads from the cache, so in
// the usual case (all present) it costs no API call. Existing objects are
// left as they are: an administrator may have tightened them.
func ensureSidecarRBAC(ctx context.Context, c client.Client, namespace string, manager *rbacv1.Subject) error {
	for _, obj := range sidecarRBAC(namespace, manager) {
		probe := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), probe)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
