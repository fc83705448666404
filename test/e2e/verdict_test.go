//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// TestRefusedLogStream: a sidecar whose log stream is refused (403) fails
// loudly: it writes turnwatch.dev/Failed with the reason and exits, and the
// controller settles the turn infra with that reason and stops the agent,
// instead of the agent running unwatched while the sidecar retries.
//
// The refusal is made in a namespace of its own, whose sidecar Role an
// administrator tightened to pods/status only (the manager leaves existing
// sidecar RBAC objects as they are). The premise is checked: if the sidecar
// is ever granted its rights another way, the test says so.
func TestRefusedLogStream(t *testing.T) {
	needOperator(t)
	t.Parallel()
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-verdict-%d", time.Now().UnixNano()%1e9)
	if err := runNamespace(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	name := render.SidecarServiceAccount
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	f := false
	if _, err := env.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta, AutomountServiceAccountToken: &f}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{ // no pods/log
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}}}}
	if _, err := env.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	if _, err := env.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	zero := int64(0)
	run := agentRun("refused-log", runSpec{scenario: "silentRun", format: "pi", speed: 0.2, rerolls: &zero})
	run.SetNamespace(ns)
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Create(ctx, run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var got *unstructured.Unstructured
	err := waitFor(ctx, 3*time.Minute, "refused-log to fault", func() (bool, error) {
		r, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Get(ctx, "refused-log", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = r
		p := str(r, "status", "phase")
		return p == "Faulted" || p == "Succeeded" || p == "Aborted", nil
	})
	pod, perr := env.kube.CoreV1().Pods(ns).Get(ctx, "refused-log-0", metav1.GetOptions{})
	if perr == nil && pod.Spec.ServiceAccountName != name {
		t.Fatalf("premise broken: the turn's Pod runs as %q, not the namespace's %s account; adapt this scenario", pod.Spec.ServiceAccountName, name)
	}
	if r, rerr := env.kube.RbacV1().Roles(ns).Get(ctx, name, metav1.GetOptions{}); rerr == nil && len(r.Rules) != 1 {
		t.Fatalf("premise broken: the sidecar Role was changed to %+v; adapt this scenario", r.Rules)
	}
	if err != nil {
		t.Fatalf("%v\nrun: %v\npod: %+v", err, got, podState(pod))
	}
	phase, class, msg := str(got, "status", "phase"), str(got, "status", "fault", "class"), str(got, "status", "fault", "message")
	if phase != "Faulted" || class != "infra" || !strings.Contains(msg, protocol.ReasonLogForbidden) {
		t.Fatalf("run %s, fault %s %q; want Faulted infra naming %s\npod: %+v", phase, class, msg, protocol.ReasonLogForbidden, podState(pod))
	}
	t.Logf("fault: %s", msg)
	// The sidecar said it on its Pod, and the agent was stopped.
	if pod == nil {
		t.Fatal(perr)
	}
	var failed *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if string(pod.Status.Conditions[i].Type) == protocol.ConditionFailed {
			failed = &pod.Status.Conditions[i]
		}
	}
	if failed == nil || failed.Reason != protocol.ReasonLogForbidden || !strings.Contains(failed.Message, "forbidden") {
		t.Errorf("Failed condition %+v", failed)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 1 {
		t.Errorf("the agent was not stopped: activeDeadlineSeconds %v", d)
	}
}

func podState(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return struct {
		Conditions []corev1.PodCondition
		Init       []corev1.ContainerStatus
	}{p.Status.Conditions, p.Status.InitContainerStatuses}
}
