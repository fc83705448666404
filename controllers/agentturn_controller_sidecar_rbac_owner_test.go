package controllers

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
)

// The sidecar's ServiceAccount and RoleBinding that the manager makes in a
// namespace are owned by the turnwatch-sidecar ClusterRole, so that the
// garbage collector deletes them when an uninstall deletes it (issue 9,
// point 4). envtest runs no garbage collector: the e2e TestHelmChart sees
// them go with `helm uninstall` alone.
func TestSidecarRBACOwnedByClusterRole(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: agentturn.SidecarClusterRole}, role); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "owned"))
	waitPod(t, ns, "owned-0")
	want := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: agentturn.SidecarClusterRole, UID: role.UID}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.RoleBinding{}} {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.SidecarServiceAccount}, obj); err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0] != want {
			t.Errorf("%T owners %+v, want the ClusterRole %+v", obj, refs, want)
		}
		if obj.GetLabels()[agentturn.LabelComponent] != agentturn.ComponentSidecarRBAC {
			t.Errorf("%T lost its label %s", obj, agentturn.LabelComponent)
		}
	}
}

// Without the ClusterRole, or the right to read it, the objects are made
// unowned (labelled as ever) rather than not at all; any other error waits.
func TestSidecarRoleOwner(t *testing.T) {
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	tests := []struct {
		name      string
		err       error
		wantOwner bool
		wantErr   bool
	}{
		{"present", nil, true, false},
		{"not installed", apierrors.NewNotFound(gr, agentturn.SidecarClusterRole), false, false},
		{"no right to read it", apierrors.NewForbidden(gr, agentturn.SidecarClusterRole, errors.New("no")), false, false},
		{"the API server unreachable", errors.New("connection refused"), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			owner, err := agentturn.SidecarRoleOwner(context.Background(), roleReader{uid: "u-1", err: tc.err})
			if (err != nil) != tc.wantErr || (owner != nil) != tc.wantOwner {
				t.Fatalf("owner %+v, err %v", owner, err)
			}
			if owner != nil && (owner.UID != "u-1" || owner.Kind != "ClusterRole" || owner.Name != agentturn.SidecarClusterRole || owner.APIVersion != "rbac.authorization.k8s.io/v1") {
				t.Errorf("owner %+v", owner)
			}
		})
	}
}

// roleReader answers a Get of a ClusterRole with uid, or err.
type roleReader struct {
	uid types.UID
	err error
}

func (r roleReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	obj.SetName(key.Name)
	obj.SetUID(r.uid)
	return nil
}

func (r roleReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}
