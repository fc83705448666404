package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A namespace's editor (exactly the built-in `edit` role, bound by a
// RoleBinding) attacks the sidecar's identity the way docs/security.md
// lists it: a TokenRequest of the sidecar's account bound to a victim's
// turn Pod (whose pod-name claim every turnwatch policy trusts), the same
// for a template's own account holding the sidecar's rights, a Pod of its
// own running as the sidecar's account (the kubelet would mint it the
// token), a long-lived token Secret of that account, impersonating either
// account to write a turn Pod's status or a run's progress, or a node.
// Every path is refused; a node still mints the sidecar's token, and the
// editor still mints tokens of accounts without those rights.
func TestEditorCannotActAsSidecar(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	// The administrator gave a template's own account the sidecar's rights
	// (docs/security.md); "plain" holds none.
	for _, sa := range []string{"agent-sa", "plain"} {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})
	}
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-sa-sidecar", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentturn.SidecarClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent-sa", Namespace: ns}}})
	startManager(t, ns, managerOpts{})
	victim := runningRun(t, newRun(ns, "victim"))
	victimSA := runningRun(t, newRun(ns, "victim-sa", func(r *twv1.AgentRun) { r.Spec.Template.Spec.ServiceAccountName = "agent-sa" }))
	run, err := getRun(ns, "victim")
	if err != nil {
		t.Fatal(err)
	}

	editorCfg := editorOf(t, ns)
	editor := kubernetes.NewForConfigOrDie(editorCfg)
	as := func(user string, extra map[string][]string) *kubernetes.Clientset {
		cfg := rest.CopyConfig(editorCfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Extra: extra}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	sidecarUser := "system:serviceaccount:" + ns + ":" + render.SidecarServiceAccount
	bound := func(pod *corev1.Pod) *authenticationv1.TokenRequest {
		req := &authenticationv1.TokenRequest{}
		if pod != nil {
			req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		return req
	}
	mint := func(c *kubernetes.Clientset, account string, req *authenticationv1.TokenRequest) error {
		_, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, req, metav1.CreateOptions{})
		return err
	}
	forged := []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":%q,"message":%q}]}}`,
		protocol.ConditionFinished, protocol.ReasonResult, protocol.Marshal(protocol.Summary{Progress: protocol.Progress{Steps: 1}, StopReason: "end", Result: true, Lines: 1})))
	podStatus := func(c *kubernetes.Clientset, pod string) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, forged, metav1.PatchOptions{}, "status")
		return err
	}
	progress := []byte(withRunUID(progressBody(99, "5000.00", victim.Name, 99, "5000.00"), string(run.UID)))
	runStatus := func(c *kubernetes.Clientset) error {
		return c.RESTClient().Patch(types.MergePatchType).AbsPath("/apis/turnwatch.dev/v1alpha1/namespaces", ns, "agentruns", "victim", "status").
			Body(progress).Do(ctx).Error()
	}

	// The editor's rights are real: `edit` creates tokens, and one of an
	// account without the sidecar's rights, bound to a Pod running as it,
	// is minted; so is one of agent-sa bound to no Pod (it carries no
	// pod-name claim). The refusals below are the policies', not RBAC's.
	// (The API server binds a token only to a Pod that runs as its
	// account.)
	// The editor's own Pod, running as an account of the namespace.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Spec: corev1.PodSpec{
		ServiceAccountName: "plain", Containers: []corev1.Container{{Name: "app", Image: "app:test"}}}}
	eventually(t, "the editor's RoleBinding in force", func() error {
		made, err := editor.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{})
		if err == nil {
			plain = made
		}
		return err
	})
	if err := mint(editor, "plain", bound(plain)); err != nil {
		t.Errorf("a token of plain bound to the editor's Pod: %v, want minted", err)
	}
	if err := mint(editor, "agent-sa", bound(nil)); err != nil {
		t.Errorf("a token of agent-sa bound to no Pod: %v, want minted", err)
	}
	if _, err := editor.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "plain"}}, Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a token Secret of plain: %v, want created", err)
	}

	refused := []struct {
		name string
		do   func() error
		want string // a text the refusal holds
	}{
		{"a token of turnwatch-sidecar bound to the victim's Pod", func() error { return mint(editor, render.SidecarServiceAccount, bound(victim)) },
			"turnwatch-sidecar-token"},
		{"a token of turnwatch-sidecar bound to no Pod", func() error { return mint(editor, render.SidecarServiceAccount, bound(nil)) },
			"is the kubelet's to mint"},
		{"a token of the template's account bound to its Pod", func() error { return mint(editor, "agent-sa", bound(victimSA)) },
			"holds the turnwatch sidecar's rights"},
		{"a token, impersonating turnwatch-sidecar", func() error { return mint(as(sidecarUser, nil), render.SidecarServiceAccount, bound(victim)) },
			`cannot create resource "serviceaccounts/token"`},
		// Two policies refuse it (turnwatch-sidecar-own-pod and
		// turnwatch-turn-pod-status); either may answer first.
		{"the victim Pod's status, impersonating turnwatch-sidecar", func() error { return podStatus(as(sidecarUser, nil), victim.Name) },
			"ValidatingAdmissionPolicy"},
		{"the victim run's progress, impersonating turnwatch-sidecar", func() error { return runStatus(as(sidecarUser, nil)) },
			"holds a token bound to no Pod"},
		{"the Pod's status, impersonating the template's account", func() error {
			return podStatus(as("system:serviceaccount:"+ns+":agent-sa", nil), victimSA.Name)
		}, "is written only by its own sidecar"},
		{"the Pod's status, impersonating turnwatch-sidecar with a pod-name claim", func() error {
			return podStatus(as(sidecarUser, map[string][]string{
				"authentication.kubernetes.io/pod-name": {victim.Name}, "authentication.kubernetes.io/pod-uid": {string(victim.UID)}}), victim.Name)
		}, `cannot impersonate resource "userextras/authentication.kubernetes.io/pod-name"`},
		{"a Pod of its own running as turnwatch-sidecar (the kubelet would mint it the token)", func() error {
			_, err := editor.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: corev1.PodSpec{
				ServiceAccountName: render.SidecarServiceAccount, Containers: []corev1.Container{{Name: "app", Image: "app:test"}}}}, metav1.CreateOptions{})
			return err
		}, "turnwatch-sidecar-account"},
		{"a long-lived token Secret of turnwatch-sidecar", func() error {
			_, err := editor.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sidecar-token",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: render.SidecarServiceAccount}}, Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
			return err
		}, "would hold a long-lived token"},
		{"a token, impersonating a node", func() error {
			cfg := rest.CopyConfig(editorCfg)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + testenv.NodeName, Groups: []string{"system:nodes"}}
			return mint(kubernetes.NewForConfigOrDie(cfg), render.SidecarServiceAccount, bound(victim))
		}, "cannot impersonate"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			// The policies take a moment to load after installPolicy.
			eventually(t, "refused", func() error {
				err := c.do()
				if !apierrors.IsForbidden(err) {
					return fmt.Errorf("want Forbidden, got %v", err)
				}
				return containsAll(err.Error(), c.want)
			})
		})
	}

	// Nothing of the victim's changed.
	pod, err := getPod(ns, victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range pod.Status.Conditions {
		if string(cond.Type) == protocol.ConditionFinished {
			t.Errorf("the victim's Pod carries a Finished condition: %+v", cond)
		}
	}
	if run, err := getRun(ns, "victim"); err != nil || run.Status.CostUSD == "5000.00" || run.Status.Steps == 99 {
		t.Errorf("the victim's run: %+v, %v", run.Status, err)
	}

	// The kubelet's path: the node mints the sidecar's token bound to the
	// Pod, and with it the sidecar writes that Pod's status.
	sidecar := kubernetes.NewForConfigOrDie(testenv.TokenConfig(restConfig, podToken(t, ns, render.SidecarServiceAccount, victim, 0)))
	eventually(t, "the sidecar writes its own Pod's status", func() error { return podStatus(sidecar, victim.Name) })
	templated := kubernetes.NewForConfigOrDie(testenv.TokenConfig(restConfig, podToken(t, ns, "agent-sa", victimSA, 0)))
	eventually(t, "the template account's sidecar writes its own Pod's status", func() error { return podStatus(templated, victimSA.Name) })
}

// editRole fills the built-in ClusterRole edit once: envtest has no
// controller manager to aggregate it.
var editRole = sync.OnceValue(func() error {
	return testenv.AggregateClusterRole(context.Background(), k8s, "edit")
})

// editorOf is a user holding exactly the built-in ClusterRole edit in ns,
// bound by a RoleBinding, authenticated by a client certificate.
func editorOf(t testing.TB, ns string) *rest.Config {
	t.Helper()
	if err := editRole(); err != nil {
		t.Fatal(err)
	}
	user := "editor@" + ns
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "editor", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})
	u, err := testEnv.AddUser(envtest.User{Name: user}, restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return u.Config()
}

// The policy recognises a node as the kubelet authenticates: a user
// system:node:NAME in the group system:nodes, both; neither part alone.
func TestSidecarTokenNodeIdentity(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: render.SidecarServiceAccount, Namespace: ns}})
	if _, err := testenv.Node(ctx, testEnv, restConfig); err != nil { // the node's RBAC
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		user   string
		groups []string
		minted bool
	}{
		{"a node", "system:node:" + testenv.NodeName, []string{"system:nodes"}, true},
		{"a node's name outside the group", "system:node:" + testenv.NodeName, []string{"system:masters"}, false},
		{"the group with another name", "system:nodes-impostor", []string{"system:nodes"}, false},
		{"a cluster administrator", "admin@" + ns, []string{"system:masters"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := testEnv.AddUser(envtest.User{Name: c.user, Groups: c.groups}, restConfig)
			if err != nil {
				t.Fatal(err)
			}
			cs := kubernetes.NewForConfigOrDie(u.Config())
			eventually(t, "decided", func() error {
				_, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, render.SidecarServiceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
				switch {
				case c.minted:
					return err
				case err == nil:
					return fmt.Errorf("%s minted a token of %s", c.user, render.SidecarServiceAccount)
				case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "turnwatch-sidecar-token"):
					return fmt.Errorf("want Forbidden by turnwatch-sidecar-token, got %v", err)
				}
				return nil
			})
		})
	}
}

// An AgentTurn is the manager's (turnwatch-agentturn-manager): an editor
// granted every turnwatch.dev resource (the status subresources included)
// may not create one (a pre-made RUN-0 with guards the limits forbid), move
// one to another run, or write its status, nor write a run's status but as
// its turn's sidecar; deleting a turn stays allowed, for cleanup. An account
// bound to the manager's ClusterRole (config/rbac/role.yaml, as the chart
// binds it) creates one.
func TestEditorCannotWriteTurns(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch-all", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{twv1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}}})
	editorCfg := editorOf(t, ns)
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "editor-turnwatch", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "turnwatch-all"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "editor@" + ns}}})
	editor, err := client.New(editorCfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	manager := managerClient(t, ns)

	run := newRun(ns, "mine")
	eventually(t, "the editor creates a run", func() error { return editor.Create(ctx, run.DeepCopy()) })
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
		t.Fatal(err)
	}
	premade := func(name string) *twv1.AgentTurn {
		turn := &twv1.AgentTurn{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: render.TurnLabels(run, 0)},
			Spec: twv1.AgentTurnSpec{RunName: run.Name, Prompt: run.Spec.Prompt, Guards: []twv1.GuardSetting{
				{Name: "stepBudget", Value: "0", Source: turnpolicy.SourceRun}}},
		}
		if err := controllerutil.SetControllerReference(run, turn, testScheme); err != nil {
			t.Fatal(err)
		}
		return turn
	}
	eventually(t, "a pre-made turn refused", func() error {
		err := editor.Create(ctx, premade(agentrun.TurnName(run.Name, 0)))
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("want Forbidden, got %v", err)
		}
		return containsAll(err.Error(), "turnwatch-agentturn-manager", "may not create it", "editor@"+ns)
	})

	// The manager's account creates one (no manager runs here to render it).
	turn := premade("by-the-manager")
	eventually(t, "the manager creates a turn", func() error { return manager.Create(ctx, turn) })
	relabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"turnwatch.dev/run":"another"}}}`))
	if err := editor.Patch(ctx, turn.DeepCopy(), relabel); !apierrors.IsForbidden(err) || containsAll(err.Error(), "turnwatch-agentturn-manager", "may not move it to another run") != nil {
		t.Errorf("moving a turn to another run: %v, want Forbidden by turnwatch-agentturn-manager", err)
	}
	spec := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"guards":[{"name":"stepBudget","value":"100000","source":"AgentRun"}]}}`))
	if err := editor.Patch(ctx, turn.DeepCopy(), spec); !apierrors.IsInvalid(err) || containsAll(err.Error(), "an AgentTurn's spec is immutable") != nil {
		t.Errorf("changing a turn's spec: %v, want Invalid (the CRD's rule)", err)
	}
	note := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"team":"a"}}}`))
	if err := editor.Patch(ctx, turn.DeepCopy(), note); err != nil {
		t.Errorf("annotating a turn: %v", err)
	}

	// The grant includes the status subresources; a turn's status and a
	// run's are the manager's too (a run's takes its sidecars' progress,
	// turnwatch-sidecar-run-progress).
	outcome := client.RawPatch(types.MergePatchType, []byte(`{"status":{"outcome":"Succeeded"}}`))
	if err := editor.Status().Patch(ctx, turn.DeepCopy(), outcome); !apierrors.IsForbidden(err) || containsAll(err.Error(), "turnwatch-agentturn-manager", "may not write its status") != nil {
		t.Errorf("a turn's outcome: %v, want Forbidden by turnwatch-agentturn-manager", err)
	}
	phase := client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Succeeded"}}`))
	if err := editor.Status().Patch(ctx, run.DeepCopy(), phase); !apierrors.IsForbidden(err) || containsAll(err.Error(), "turnwatch-sidecar-run-progress") != nil {
		t.Errorf("a run's phase: %v, want Forbidden by turnwatch-sidecar-run-progress", err)
	}
	if err := editor.Delete(ctx, turn.DeepCopy()); err != nil {
		t.Errorf("deleting a turn: %v, want allowed (cleanup)", err)
	}
}

// managerConfig is a config of an account turnwatch-manager in ns, bound
// to the manager's ClusterRole (config/rbac/role.yaml) as the chart binds
// it; the ClusterRole is named after ns (the API server is shared between
// tests).
func managerConfig(t testing.TB, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		t.Fatal(err)
	}
	role.Name = "turnwatch-manager-" + ns
	create(t, role)
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch-manager", Namespace: ns}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "turnwatch-manager", Namespace: ns}}})
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, role)
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}})
	})
	as := rest.CopyConfig(restConfig)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":turnwatch-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return as
}

// managerClient is a client of managerConfig's account.
func managerClient(t testing.TB, ns string) client.Client {
	t.Helper()
	c, err := client.New(managerConfig(t, ns), client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The manager, with the rights the chart gives it and no more, runs a turn
// to the end through every admission policy: it creates the turn
// (turnwatch-agentturn-manager), writes the turn's status and the run's
// (turnwatch-sidecar-run-progress), while the sidecar reports with the
// token a node minted for it.
func TestManagerPassesPolicies(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{rest: managerConfig(t, ns)})
	pod := runningRun(t, newRun(ns, "through"))
	sidecar := sidecarOf(t, ns, render.SidecarServiceAccount, pod)
	run, err := getRun(ns, "through")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the sidecar's progress report", func() error {
		return reportProgress(sidecar, ns, "through", withRunUID(progressBody(2, "0.01", pod.Name, 2, "0.01"), string(run.UID)))
	})
	playSidecar(t, ns, pod.Name, finishedCond(protocol.Summary{Progress: counts(2, "0.01"), StopReason: "end", Result: true}))
	runPhase(t, ns, "through", twv1.RunSucceeded)
	if turn := turnSettled(t, ns, pod.Name); turn.Status.Outcome != twv1.TurnSucceeded {
		t.Errorf("the turn: %+v", turn.Status)
	}
}

// managerCheck is how the admission policies recognise the manager: the
// right config/rbac/role.yaml gives it alone.
const managerCheck = "authorizer.group('rbac.authorization.k8s.io').resource('clusterroles').name('" + agentturn.SidecarClusterRole + "').check('bind').allowed()"

// The policies that trust the manager recognise it alike, by a right the
// manager's ClusterRole holds: bind on the sidecar's ClusterRole.
func TestPoliciesRecogniseTheManager(t *testing.T) {
	policies := admissionPolicies(t)
	for _, name := range []string{"turnwatch-agentturn-manager", "turnwatch-sidecar-run-progress", "turnwatch-sidecar-account"} {
		p, ok := policies[name]
		if !ok {
			t.Fatalf("no admission policy %s", name)
		}
		var exprs []string
		for _, c := range p.Spec.MatchConditions {
			exprs = append(exprs, c.Expression)
		}
		for _, v := range p.Spec.Validations {
			exprs = append(exprs, v.Expression)
		}
		found := false
		for _, e := range exprs {
			found = found || strings.Contains(e, managerCheck)
			if strings.Contains(e, "check(") && !strings.Contains(e, managerCheck) {
				t.Errorf("%s: %q asks the authorizer something else than %s", name, e, managerCheck)
			}
		}
		if !found {
			t.Errorf("%s does not recognise the manager by %s", name, managerCheck)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, rbacv1.GroupName) && slices.Contains(r.Resources, "clusterroles") &&
			slices.Contains(r.Verbs, "bind") && slices.Equal(r.ResourceNames, []string{agentturn.SidecarClusterRole}) {
			return
		}
	}
	t.Errorf("config/rbac/role.yaml gives the manager no bind on ClusterRole %s alone", agentturn.SidecarClusterRole)
}
