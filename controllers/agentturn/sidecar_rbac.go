package agentturn

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"turnwatch.dev/turnwatch/controllers/render"
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

// SidecarRBAC are the ServiceAccount and RoleBinding a namespace needs
// before a turn's Pod can run there: the binding gives the account the
// turnwatch-sidecar ClusterRole in this namespace only. The manager, when
// known, is the binding's second subject, so that it may read a log tail
// here (manager_identity.go) without pods/log anywhere else.
func SidecarRBAC(namespace string, manager *rbacv1.Subject) []client.Object {
	return accountRBAC(namespace, render.SidecarServiceAccount, manager)
}

// AttachRBAC are the ServiceAccount and RoleBinding of the attached Pods'
// sidecars (render.AttachServiceAccount, docs/attach.md): the same rights
// as a turn's sidecar, under their own name.
func AttachRBAC(namespace string, manager *rbacv1.Subject) []client.Object {
	return accountRBAC(namespace, render.AttachServiceAccount, manager)
}

func accountRBAC(namespace, account string, manager *rbacv1.Subject) []client.Object {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: account, Namespace: namespace,
			Labels: map[string]string{LabelComponent: ComponentSidecarRBAC},
		}
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(), AutomountServiceAccountToken: ptr.To(false)},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SidecarClusterRole},
			Subjects:   sidecarSubjects(namespace, account, manager),
		},
	}
}

func sidecarSubjects(namespace, account string, manager *rbacv1.Subject) []rbacv1.Subject {
	s := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}}
	if manager != nil {
		s = append(s, *manager)
	}
	return s
}

// ensureSidecarRBAC creates what is missing; it reads from the cache, so in
// the usual case (all present) it costs no API call. Existing objects are
// left as they are: an administrator may have tightened them. What it
// creates is owned by the turnwatch-sidecar ClusterRole (sidecarRoleOwner),
// read around the cache through reader.
func ensureSidecarRBAC(ctx context.Context, c client.Client, reader client.Reader, namespace string, manager *rbacv1.Subject) error {
	return EnsureRBAC(ctx, c, reader, SidecarRBAC(namespace, manager))
}

// EnsureRBAC creates those of objs that are missing, as ensureSidecarRBAC.
func EnsureRBAC(ctx context.Context, c client.Client, reader client.Reader, objs []client.Object) error {
	var missing []client.Object
	for _, obj := range objs {
		probe := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), probe)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		missing = append(missing, obj)
	}
	if len(missing) == 0 {
		return nil
	}
	owner, err := SidecarRoleOwner(ctx, reader)
	if err != nil {
		return err
	}
	for _, obj := range missing {
		if owner != nil {
			obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get,resourceNames=turnwatch-sidecar

// SidecarRoleOwner is the owner reference that has the garbage collector
// delete a namespace's sidecar ServiceAccount and RoleBinding with the
// ClusterRole they serve, which `helm uninstall` and `make undeploy` delete:
// so an uninstall leaves none of them behind. It is read afresh for each
// creation (once per namespace): an owner UID that no longer exists would
// have the new objects deleted at once. Without the ClusterRole (not
// installed yet) or the right to read it (an older manager Role), nil: the
// objects are made unowned, labelled as ever.
func SidecarRoleOwner(ctx context.Context, reader client.Reader) (*metav1.OwnerReference, error) {
	role := &rbacv1.ClusterRole{}
	err := reader.Get(ctx, client.ObjectKey{Name: SidecarClusterRole}, role)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		log.FromContext(ctx).Info("the sidecar's RBAC objects are made without an owner: an uninstall leaves them", "clusterRole", SidecarClusterRole, "reason", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &metav1.OwnerReference{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: role.Name, UID: role.UID}, nil
}
