//go:build envtest

// The sidecar's Kubernetes side on a real kube-apiserver and etcd (envtest):
// its least-privilege Role and admission policy, as shipped in
// config/sidecar, and the reporter and the whole run loop writing through
// the sidecar's own, Pod-bound credential. Run with KUBEBUILDER_ASSETS set
// (hack/envtest.sh prints it) and `-tags envtest`.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

var (
	testEnv *envtest.Environment
	admin   *kubernetes.Clientset
	// apiCfg is the admin's config; tests derive token configs from it.
	apiCfg *rest.Config
)

func TestMain(m *testing.M) {
	testEnv = &envtest.Environment{}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v (is KUBEBUILDER_ASSETS set? hack/envtest.sh prints it)\n", err)
		os.Exit(1)
	}
	apiCfg = cfg
	admin = kubernetes.NewForConfigOrDie(cfg)
	if err := installPolicy(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "installing config/sidecar: %v\n", err)
		_ = testEnv.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
	os.Exit(code)
}

// manifest reads the YAML documents of a file under config/sidecar.
func manifest(name string) ([][]byte, error) {
	b, err := os.ReadFile(filepath.Join("..", "config", "sidecar", name))
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, d := range strings.Split(string(b), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs, nil
}

// installPolicy creates the shipped ValidatingAdmissionPolicy and binding.
func installPolicy(ctx context.Context) error {
	docs, err := manifest("validatingadmissionpolicy.yaml")
	if err != nil || len(docs) != 2 {
		return fmt.Errorf("want a policy and a binding: %v", err)
	}
	var pol admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(docs[0], &pol); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(docs[1], &bind); err != nil {
		return err
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &pol, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &bind, metav1.CreateOptions{})
	return err
}

// sidecarNamespace is a namespace set up as the chart sets one up: the
// ServiceAccount turnwatch-sidecar bound to the shipped Role.
func sidecarNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tw-"}}, metav1.CreateOptions{})
	must(t, err)
	docs, err := manifest("role.yaml")
	must(t, err)
	var role rbacv1.Role
	must(t, yaml.UnmarshalStrict(docs[0], &role))
	_, err = admin.RbacV1().Roles(ns.Name).Create(ctx, &role, metav1.CreateOptions{})
	must(t, err)
	_, err = admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch-sidecar"}}, metav1.CreateOptions{})
	must(t, err)
	bindRole(t, ctx, ns.Name, ns.Name)
	return ns.Name
}

// bindRole binds the Role in ns to the sidecar ServiceAccount of saNS.
func bindRole(t *testing.T, ctx context.Context, ns, saNS string) {
	t.Helper()
	_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "turnwatch-sidecar-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "turnwatch-sidecar"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "turnwatch-sidecar", Namespace: saNS}},
	}, metav1.CreateOptions{})
	must(t, err)
}

// agentPod creates a turn's Pod as the controller renders it (enough of it).
func agentPod(t *testing.T, ctx context.Context, ns, name string) *corev1.Pod {
	t.Helper()
	no := false
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName:           "turnwatch-sidecar",
			AutomountServiceAccountToken: &no,
			RestartPolicy:                corev1.RestartPolicyNever,
			Containers:                   []corev1.Container{{Name: "agent", Image: "agent:test"}},
		},
	}, metav1.CreateOptions{})
	must(t, err)
	return pod
}

// sidecarToken is the credential the kubelet projects into the sidecar: a
// token of turnwatch-sidecar bound to pod (nil: bound to nothing).
func sidecarToken(t *testing.T, ctx context.Context, ns string, pod *corev1.Pod) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "turnwatch-sidecar", req, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// tokenConfig is apiCfg with the token as the only credential.
func tokenConfig(token string) *rest.Config {
	return &rest.Config{Host: apiCfg.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: apiCfg.CAData}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitForPolicy waits until the admission plugin has loaded the policy:
// a write to a Pod the token is not bound to is refused.
func waitForPolicy(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, other string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, other, types.StrategicMergePatchType, []byte("{}"), metav1.PatchOptions{}, "status")
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	})
	must(t, err)
}

const tripPatch = `{"status":{"conditions":[{"type":"turnwatch.dev/Tripped","status":"True","reason":"IdenticalCalls","message":"repeated an identical tool call 4 times"}]}}`

// The sidecar's credential does one thing: write its own Pod's status.
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	ns := sidecarNamespace(t, ctx)
	a, b := agentPod(t, ctx, ns, "a"), agentPod(t, ctx, ns, "b")
	_ = b
	sidecar := kubernetes.NewForConfigOrDie(tokenConfig(sidecarToken(t, ctx, ns, a)))
	unbound := kubernetes.NewForConfigOrDie(tokenConfig(sidecarToken(t, ctx, ns, nil)))
	waitForPolicy(t, ctx, sidecar, ns, "b")

	// Someone bound the Role in a second namespace to the sidecar of the
	// first, by mistake; that namespace has a Pod named like the own one.
	other := sidecarNamespace(t, ctx)
	bindRole(t, ctx, other, ns)
	agentPod(t, ctx, other, "a")

	patchStatus := func(c kubernetes.Interface, ns, pod string) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, []byte(tripPatch), metav1.PatchOptions{}, "status")
		return err
	}
	cases := []struct {
		name string
		do   func() error
		// want is "" for success, else a text the refusal must contain.
		want string
	}{
		{"patch own Pod's status", func() error { return patchStatus(sidecar, ns, "a") }, ""},
		{"patch a neighbour's status", func() error { return patchStatus(sidecar, ns, "b") },
			"turnwatch-sidecar may only write its own Pod (a), not " + ns + "/b"},
		{"patch the same name in another namespace", func() error { return patchStatus(sidecar, other, "a") },
			"turnwatch-sidecar may only write its own Pod (a), not " + other + "/a"},
		{"patch with a token bound to no Pod", func() error { return patchStatus(unbound, ns, "a") },
			"turnwatch-sidecar may only write its own Pod (no pod-name claim in its token)"},
		{"patch own Pod's spec", func() error {
			_, err := sidecar.CoreV1().Pods(ns).Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`), metav1.PatchOptions{})
			return err
		}, `cannot patch resource "pods" in API group "" in the namespace "` + ns + `"`},
		{"get own Pod", func() error { _, err := sidecar.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{}); return err },
			`cannot get resource "pods"`},
		{"list Pods", func() error { _, err := sidecar.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); return err },
			`cannot list resource "pods"`},
		{"create a Pod", func() error {
			_, err := sidecar.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}, metav1.CreateOptions{})
			return err
		}, `cannot create resource "pods"`},
		{"delete own Pod", func() error { return sidecar.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}) },
			`cannot delete resource "pods"`},
		{"read a Secret", func() error { _, err := sidecar.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err },
			`cannot list resource "secrets"`},
		{"request another token", func() error {
			_, err := sidecar.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "turnwatch-sidecar", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}, `cannot create resource "serviceaccounts/token"`},
		{"write an Event", func() error {
			_, err := sidecar.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "e-"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "a"}}, metav1.CreateOptions{})
			return err
		}, `cannot create resource "events"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("allowed, want refused with %q", tc.want)
			case tc.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("refused with %v\nwant Forbidden containing %q", err, tc.want)
			}
			if err != nil {
				t.Logf("refused: %v", err)
			}
		})
	}

	// Reads pass no admission: RBAC alone decides, per namespace. What the
	// token may read, as the authorizer itself answers (no kubelet here to
	// serve a log).
	reads := []struct {
		ns, pod, sub, verb string
		allowed            bool
	}{
		{ns, "a", "log", "get", true},
		{ns, "b", "log", "get", true}, // the limit RBAC cannot draw: see config/sidecar/role.yaml
		{"default", "x", "log", "get", false},
		{ns, "a", "exec", "create", false},
		{ns, "a", "status", "get", false},
	}
	for _, r := range reads {
		review, err := sidecar.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, selfReview(r.ns, r.pod, r.sub, r.verb), metav1.CreateOptions{})
		must(t, err)
		if review.Status.Allowed != r.allowed {
			t.Errorf("%s pods/%s %s/%s: allowed=%v, want %v", r.verb, r.sub, r.ns, r.pod, review.Status.Allowed, r.allowed)
		}
	}
}

func selfReview(ns, pod, sub, verb string) *authorizationv1.SelfSubjectAccessReview {
	return &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods", Subresource: sub, Name: pod},
	}}
}
