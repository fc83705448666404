//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// tenantUser is the hostile namespace user of TestTenantAttacks, a
// ServiceAccount of the suite's namespace: the built-in `edit` role there,
// and the right to write AgentRuns and AgentTurns (any turnwatch.dev grant
// a platform team might give its users).
const tenantUser = "e2e-tenant"

// TestTenantAttacks plays, on the real node, the two hostile actors of
// docs/security.md's v4 rows: a namespace user with `edit` who tries every
// path to a neighbour's verdict, a turn of their own making, a Pod stronger
// than they could create, or a policy of their own; and an agent whose
// stream tries to lower its spend, make its watchdog fall over with a
// 12 MiB call and forge a row of `explain`. Every attempt must fail, and
// the test asserts by what.
func TestTenantAttacks(t *testing.T) {
	needOperator(t)
	ctx := context.Background()
	tenantCfg := tenantConfig(t)
	tenant := clientsFor(tenantCfg)
	createRun(t, "tenant-victim", runSpec{scenario: "silentRun", format: "pi", speed: 0.5})
	victim := waitPodOfRun(t, "tenant-victim")
	p, err := env.kube.CoreV1().Pods(env.ns).Get(ctx, victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"status":{"conditions":[{"type":"` + protocol.ConditionFinished + `","status":"True","reason":"Result","message":"{\"steps\":1,\"costUSD\":\"0\",\"stopReason\":\"end\",\"result\":true,\"lines\":1,\"unparsed\":0}"}]}}`)

	refused := func(t *testing.T, what string, err error, by string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: allowed", what)
			return
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
			return
		}
		if by != "" && !strings.Contains(err.Error(), by) {
			t.Errorf("%s: refused, but not by %s: %v", what, by, err)
			return
		}
		t.Logf("%s: %v", what, err)
	}

	t.Run("mint the sidecar's token bound to a neighbour's Pod", func(t *testing.T) {
		_, err := tenant.kube.CoreV1().ServiceAccounts(env.ns).CreateToken(ctx, "turnwatch-sidecar", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
		}, metav1.CreateOptions{})
		refused(t, "TokenRequest for turnwatch-sidecar", err, "turnwatch-sidecar-token")
	})

	sidecarSA := "system:serviceaccount:" + env.ns + ":turnwatch-sidecar"
	sidecarCfg := rest.CopyConfig(tenantCfg)
	sidecarCfg.Impersonate = rest.ImpersonationConfig{UserName: sidecarSA}
	asSidecar := clientsFor(sidecarCfg)
	t.Run("act as the sidecar by impersonation", func(t *testing.T) {
		_, err := asSidecar.kube.CoreV1().Pods(env.ns).Patch(ctx, victim, types.StrategicMergePatchType, forged, metav1.PatchOptions{}, "status")
		// turnwatch-turn-pod-status and turnwatch-sidecar-own-pod both
		// refuse it (no pod-name claim); either may answer first.
		refused(t, "forge the neighbour's Finished as the sidecar", err, "ValidatingAdmissionPolicy 'turnwatch-")
		_, err = asSidecar.dyn.Resource(agentRunGVR).Namespace(env.ns).Patch(ctx, "tenant-victim", types.MergePatchType,
			[]byte(`{"status":{"costUSD":"5000.00","steps":1}}`), metav1.PatchOptions{}, "status")
		refused(t, "raise the neighbour's progress as the sidecar", err, "")
		_, err = asSidecar.kube.CoreV1().ServiceAccounts(env.ns).CreateToken(ctx, "turnwatch-sidecar", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
		}, metav1.CreateOptions{})
		// RBAC refuses it before admission: the sidecar's account may not
		// create tokens (turnwatch-sidecar-token would refuse it too).
		refused(t, "mint its own token as the sidecar", err, `cannot create resource "serviceaccounts/token"`)
	})

	t.Run("write an AgentTurn by hand", func(t *testing.T) {
		turn := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "turnwatch.dev/v1alpha1", "kind": "AgentTurn",
			"metadata": map[string]any{"name": "tenant-premade-0", "namespace": env.ns,
				"labels": map[string]any{"turnwatch.dev/run": "tenant-premade"}},
			"spec": map[string]any{"runName": "tenant-premade", "attempt": int64(0), "prompt": "x",
				"conversationID": "00000000-0000-4000-8000-000000000000"},
		}}
		_, err := tenant.dyn.Resource(agentTurnGVR).Namespace(env.ns).Create(ctx, turn, metav1.CreateOptions{})
		refused(t, "create AgentTurn tenant-premade-0", err, "turnwatch-agentturn-manager")
	})

	t.Run("an AgentRun stronger than a Pod", func(t *testing.T) {
		run := agentRun("tenant-sysadmin", runSpec{scenario: "healthy", format: "pi", speed: 4})
		spec := run.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		spec["containers"].([]any)[0].(map[string]any)["securityContext"] = map[string]any{
			"capabilities": map[string]any{"add": []any{"SYS_ADMIN", "NET_RAW"}}}
		_, err := tenant.dyn.Resource(agentRunGVR).Namespace(env.ns).Create(ctx, run, metav1.CreateOptions{})
		refused(t, "AgentRun adding SYS_ADMIN", err, "turnwatch-agentrun-template")
	})

	t.Run("have the kubelet mint the sidecar's token", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-as-sidecar"}, Spec: corev1.PodSpec{
			ServiceAccountName: "turnwatch-sidecar", HostNetwork: true,
			Containers: []corev1.Container{{Name: "c", Image: fakeAgentImage, ImagePullPolicy: corev1.PullNever}}}}
		_, err := tenant.kube.CoreV1().Pods(env.ns).Create(ctx, pod, metav1.CreateOptions{})
		refused(t, "a Pod of the tenant's running as turnwatch-sidecar", err, "turnwatch-sidecar-account")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tenant-sidecar-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "turnwatch-sidecar"}},
			Type: corev1.SecretTypeServiceAccountToken}
		_, err = tenant.kube.CoreV1().Secrets(env.ns).Create(ctx, secret, metav1.CreateOptions{})
		refused(t, "a token Secret of turnwatch-sidecar", err, "turnwatch-sidecar-account")
	})

	t.Run("set their own policy or consent", func(t *testing.T) {
		pol := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "turnwatch.dev/v1alpha1", "kind": "TurnPolicy",
			"metadata": map[string]any{"name": "tenant-own", "namespace": env.ns},
			"spec":     map[string]any{"enforcement": "audit"},
		}}
		_, err := tenant.dyn.Resource(schema.GroupVersionResource{Group: "turnwatch.dev", Version: "v1alpha1", Resource: "turnpolicies"}).
			Namespace(env.ns).Create(ctx, pol, metav1.CreateOptions{})
		refused(t, "create a TurnPolicy", err, "")
		_, err = tenant.kube.CoreV1().Namespaces().Patch(ctx, env.ns, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"turnwatch.dev/host-network":"allowed"}}}`), metav1.PatchOptions{})
		refused(t, "label the namespace to consent to the node's network", err, "")
	})

	t.Run("exec into the sidecar", func(t *testing.T) {
		out, err := kubectl("--as", "system:serviceaccount:"+env.ns+":"+tenantUser, "-n", env.ns, "exec", victim, "-c", protocol.SidecarContainerName, "--", "/usr/local/bin/turnwatch-sidecar", "--help")
		if err == nil || !strings.Contains(out, "turnwatch-sidecar-no-entry") {
			t.Errorf("kubectl exec into the sidecar as the tenant: %v\n%s", err, out)
		}
	})

	t.Run("the agent's stream", hostileStream)
	_ = env.dyn.Resource(agentRunGVR).Namespace(env.ns).Delete(ctx, "tenant-victim", metav1.DeleteOptions{})
}

// hostileStream runs a claude stream, refusing on, that makes a 12 MiB
// call under a tool name with terminal escapes and ends with a result
// whose total_cost_usd is 0 (test/fakeagent/hostile.go): the sidecar stays
// up (no restart), the turn keeps its priced cost and says CostMismatch,
// and `kubectl turnwatch explain` prints no escape of the agent's raw.
func hostileStream(t *testing.T) {
	bin := needTools(t)
	createRun(t, "tenant-hostile", runSpec{scenario: "healthy", format: "claude", speed: 4,
		rerolls:   ptrInt64(0),
		guards:    map[string]any{"nudgeDelivery": "file"},
		extraArgs: []string{"--hostile-call", fmt.Sprint(12 << 20)}})
	run := waitRun(t, "tenant-hostile", 3*time.Minute)
	turns := turnsOf("tenant-hostile")
	if len(turns) != 1 {
		t.Fatalf("%d turns, want 1\n%s", len(turns), debugRun("tenant-hostile"))
	}
	if class := str(turns[0], "status", "class"); class == "infra" {
		t.Errorf("the turn failed as infra: the watchdog fell over\n%s", debugRun("tenant-hostile"))
	}
	if p, ok := podOfTurn("tenant-hostile", turns[0]); ok {
		if cs, ok := containerStatus(p, protocol.SidecarContainerName); ok && cs.RestartCount > 0 {
			t.Errorf("the sidecar restarted %d times (last: %+v)", cs.RestartCount, cs.LastTerminationState.Terminated)
		}
	}
	if cost := str(run, "status", "costUSD"); cost == "" || sameDecimal(cost, "0") {
		t.Errorf("run cost %q: the result's 0 erased the priced messages", cost)
	}
	if !turnConditionTrue(turns[0], "CostMismatch") {
		t.Errorf("no CostMismatch condition on the turn\n%s", debugRun("tenant-hostile"))
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl-turnwatch"), "explain", "tenant-hostile", "-n", env.ns,
		"--kubeconfig", env.kubeconfig, "--color", "never").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl turnwatch explain: %v\n%.4000s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "forged") {
			t.Logf("explain shows the hostile call as: %.300s", l)
		}
	}
	if strings.ContainsRune(string(out), 0x1b) || strings.Contains(string(out), "\nTRIPPED identicalCalls (forged)") {
		t.Errorf("explain printed the agent's escapes raw:\n%.4000q", out)
	}
}

// turnConditionTrue says whether the turn has the condition, True.
func turnConditionTrue(turn *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(turn.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

func ptrInt64(v int64) *int64 { return &v }

type clients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func clientsFor(cfg *rest.Config) clients {
	return clients{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

// tenantConfig makes the tenant (once): a ServiceAccount of the suite's
// namespace bound to the built-in `edit` role and to AgentRun and AgentTurn
// writes there, and returns a client config with a token of its own, so
// that its own rights (impersonation included) are what the API server
// judges.
func tenantConfig(t *testing.T) *rest.Config {
	t.Helper()
	ctx := context.Background()
	if _, err := env.kube.CoreV1().ServiceAccounts(env.ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenantUser}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-turnwatch"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"turnwatch.dev"}, Resources: []string{"agentruns", "agentturns"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if _, err := env.kube.RbacV1().Roles(env.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for name, ref := range map[string]rbacv1.RoleRef{
		"tenant-edit":      {APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		"tenant-turnwatch": {APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant-turnwatch"},
	} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenantUser, Namespace: env.ns}}}
		if _, err := env.kube.RbacV1().RoleBindings(env.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tok, err := env.kube.CoreV1().ServiceAccounts(env.ns).CreateToken(ctx, tenantUser,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.cfg)
	cfg.BearerToken = tok.Status.Token
	return cfg
}
