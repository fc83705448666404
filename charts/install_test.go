package charts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestChartInstallsOnAPIServer creates every object the chart renders (every
// option on) on a real kube-apiserver that serves the chart's own CRDs, as
// `helm install` would: the API server validates each object (the admission
// policy's CEL included). Then, acting as the manager's ServiceAccount, it
// creates the sidecar's ServiceAccount, Role and RoleBinding in a new
// namespace, as the manager does on the first AgentRun there: RBAC lets an
// account grant only what it holds, so this proves the chart's manager
// ClusterRole suffices.
func TestChartInstallsOnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("no envtest API server (KUBEBUILDER_ASSETS unset): run `make test-chart`")
	}
	objs := render(t, "-f", chartDir+"/ci/all-on-values.yaml")

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, chartDir, "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{namespace, "agents", "reviewers", "team-a"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	created := 0
	for _, o := range objs {
		if o.kind() == "ServiceMonitor" { // its CRD belongs to the Prometheus Operator
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		if err := admin.Create(ctx, u); err != nil {
			t.Errorf("%s: the API server refuses it: %v", o.key(), err)
			continue
		}
		created++
	}
	if created < 10 {
		t.Fatalf("created %d objects, want the whole chart", created)
	}

	// The manager, by its ServiceAccount, provisions the sidecar in team-a.
	sa := find(t, objs, "ServiceAccount", namespace, "-manager")
	asManager := rest.CopyConfig(cfg)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + sa.meta("name")}
	manager, err := client.New(asManager, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	want := only(readYAMLFiles(t, "config/sidecar/role.yaml"), "Role")["turnwatch-sidecar"]
	var rules []rbacv1.PolicyRule
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"rules": want["rules"]}, &struct {
		Rules *[]rbacv1.PolicyRule `json:"rules"`
	}{&rules}); err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Name: "turnwatch-sidecar", Namespace: "team-a"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta},
		&rbacv1.Role{ObjectMeta: meta, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: meta.Namespace}}},
	} {
		if err := manager.Create(ctx, obj); err != nil {
			t.Errorf("the manager cannot create the sidecar's %T: %v", obj, err)
		}
	}

	// The check is effective: the manager may not grant what it does not hold.
	more := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "too-much", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}}}
	if err := manager.Create(ctx, more); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not currently held") {
		t.Errorf("the manager granted pods/exec (err %v); want an escalation refusal", err)
	}
}
