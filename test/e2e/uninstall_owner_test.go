//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sidecarRBACSelector selects the sidecar identities turnwatch makes per
// namespace (agentturn.LabelComponent=ComponentSidecarRBAC).
const sidecarRBACSelector = "turnwatch.dev/component=sidecar-rbac"

// checkSidecarRBACOwned: the RoleBinding the manager made in the test's
// namespace is owned by the turnwatch-sidecar ClusterRole (issue 9, point 4),
// so that uninstalling, which deletes that ClusterRole, deletes it too.
func checkSidecarRBACOwned(t *testing.T) {
	t.Helper()
	rb, err := env.kube.RbacV1().RoleBindings(env.ns).Get(context.Background(), "turnwatch-sidecar", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sidecar's RoleBinding in %s: %v", env.ns, err)
	}
	if refs := rb.OwnerReferences; len(refs) != 1 || refs[0].Kind != "ClusterRole" || refs[0].Name != "turnwatch-sidecar" {
		t.Errorf("the sidecar's RoleBinding in %s is owned by %+v, want the ClusterRole turnwatch-sidecar", env.ns, refs)
	}
}

// waitSidecarRBACCollected: after the uninstall, the garbage collector
// removes every sidecar ServiceAccount and RoleBinding, with no kubectl
// delete of them.
func waitSidecarRBACCollected(t *testing.T) {
	t.Helper()
	var left string
	err := waitFor(context.Background(), 2*time.Minute, "the sidecar identities to be collected", func() (bool, error) {
		out, err := kubectl("get", "serviceaccounts,rolebindings", "-A", "-l", sidecarRBACSelector, "-o", "name")
		left = strings.TrimSpace(out)
		return err == nil && left == "", nil
	})
	if err != nil {
		t.Errorf("after helm uninstall, still there: %s", left)
	}
}
