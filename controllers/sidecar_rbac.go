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

// sidecarRules are all the sidecar may do: read its agent's log and write
// its own Pod's status conditions.
var sidecarRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
}

// LabelComponent marks what turnwatch makes outside its own API, whoever
// makes it: the chart (whose objects say managed-by Helm) and the manager set
// it alike, and the manager's cache selects on it, so that an object the
// chart made is seen and not created a second time.
const (
	LabelComponent       = "turnwatch.dev/component"
	ComponentSidecarRBAC = "sidecar-rbac"
)

// sidecarRBAC are the ServiceAccount, Role and RoleBinding a namespace needs
// before a turn's Pod can run there.
func sidecarRBAC(namespace string) []client.Object {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: SidecarServiceAccount, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "turnwatch", LabelComponent: ComponentSidecarRBAC},
		}
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(), AutomountServiceAccountToken: ptr.To(false)},
		&rbacv1.Role{ObjectMeta: meta(), Rules: sidecarRules},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: SidecarServiceAccount},
			Subjects: []rbacv1.Subject{{
				Kind: rbacv1.ServiceAccountKind, Name: SidecarServiceAccount, Namespace: namespace,
			}},
		},
	}
}

// ensureSidecarRBAC creates what is missing; it reads from the cache, so in
// the usual case (all present) it costs no API call. Existing objects are
// left as they are: an administrator may have tightened them.
func ensureSidecarRBAC(ctx context.Context, c client.Client, namespace string) error {
	for _, obj := range sidecarRBAC(namespace) {
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
