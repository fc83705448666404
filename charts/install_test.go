package charts_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/internal/testenv"
)

// TestChartInstallsOnAPIServer creates every object the chart renders (every
// option on) on a real kube-apiserver that serves the chart's own CRDs, as
// `helm install` would: the API server validates each object (the admission
// policy's CEL included). Then, acting as the manager's ServiceAccount, it
// creates the sidecar's ServiceAccount and RoleBinding in a new
// namespace, as the manager does on the first AgentRun there: RBAC lets an
// account grant only what it holds, so this proves the chart's manager
// ClusterRole suffices.
func TestChartInstallsOnAPIServer(t *testing.T) {
	testenv.Need(t)
	objs := render(t, "-f", chartDir+"/ci/all-on-values.yaml")

	env, cfg := testenv.StartT(t, filepath.Join(chartDir, "crds"))
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
	meta := metav1.ObjectMeta{Name: "turnwatch-sidecar", Namespace: "team-a"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta},
		&rbacv1.RoleBinding{ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "turnwatch-sidecar"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: meta.Namespace}}},
	} {
		if err := manager.Create(ctx, obj); err != nil {
			t.Errorf("the manager cannot create the sidecar's %T: %v", obj, err)
		}
	}

	// The manager grants the sidecar's ClusterRole and nothing else: it may
	// not bind another role, nor write a Role of its own.
	other := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "too-much", Namespace: "team-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: meta.Namespace}}}
	if err := manager.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("the manager bound the cluster-admin ClusterRole (err %v); want Forbidden", err)
	}
	more := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "too-much", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}}}
	if err := manager.Create(ctx, more); !apierrors.IsForbidden(err) {
		t.Errorf("the manager created a Role (err %v); want Forbidden", err)
	}

	// Leader election: the manager keeps its Lease, and records Events, in
	// the release namespace (the manager runs it only in-cluster, where it
	// finds that namespace from its token mount, so the test makes the calls).
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch.dev", Namespace: namespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("manager-0")}}
	if err := manager.Create(ctx, lease); err != nil {
		t.Errorf("the manager cannot create its Lease: %v", err)
	} else {
		lease.Spec.HolderIdentity = ptr.To("manager-1")
		if err := manager.Update(ctx, lease); err != nil {
			t.Errorf("the manager cannot renew its Lease: %v", err)
		}
	}
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch.dev.1", Namespace: namespace},
		EventTime: metav1.NowMicro(), ReportingController: "turnwatch.dev/manager", ReportingInstance: "manager-1",
		Action: "Elected", Reason: "LeaderElection", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Lease", Namespace: namespace, Name: "turnwatch.dev"}}
	if err := manager.Create(ctx, event); err != nil {
		t.Errorf("the manager cannot record a leader-election Event: %v", err)
	}
	elsewhere := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch.dev", Namespace: "team-a"}}
	if err := manager.Create(ctx, elsewhere); !apierrors.IsForbidden(err) {
		t.Errorf("the manager may create Leases outside its namespace (err %v); want Forbidden", err)
	}

	t.Run("the manager runs on the chart's RBAC", func(t *testing.T) {
		runManager(t, env, cfg, admin, objs, sa.meta("name"))
	})
}

// runManager starts the real manager binary with the chart's flags and config
// file, authenticated as the chart's manager ServiceAccount (a client
// certificate for that user name: RBAC cannot tell it from the token), lets
// it reconcile an AgentRun into a turn Pod, and fails on any request the
// API server refused it.
func runManager(t *testing.T, env *envtest.Environment, cfg *rest.Config, admin client.Client, objs []object, saName string) {
	bin := managerBinary(t)
	user, err := env.AddUser(envtest.User{
		Name:   "system:serviceaccount:" + namespace + ":" + saName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probeAddr := l.Addr().String()
	l.Close()
	metricsAddr := freeAddr(t)

	// The chart's arguments, but for what only holds inside the cluster: the
	// config's path, leader election (it finds its namespace from the Pod's
	// token mount) and the listeners (loopback, free port).
	_, c := managerContainer(t, objs)
	var argv []string
	for _, a := range c["args"].([]any) {
		flag, _, _ := strings.Cut(a.(string), "=")
		switch flag {
		case "--config":
			argv = append(argv, "--config="+writeConfig(t, objs))
		case "--leader-elect":
			argv = append(argv, "--leader-elect=false")
		case "--metrics-bind-address":
			argv = append(argv, "--metrics-bind-address="+metricsAddr)
		case "--health-probe-bind-address":
			argv = append(argv, "--health-probe-bind-address="+probeAddr)
		default:
			argv = append(argv, a.(string))
		}
	}
	var logs testenv.SyncBuffer
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)

	ctx := context.Background()
	waitFor(t, &logs, "the manager to be ready", func() bool {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if resp, err := http.Get("http://" + probeAddr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %v %v", resp, err)
	}

	// One AgentRun in a namespace the manager has never seen.
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}); err != nil {
		t.Fatal(err)
	}
	run := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(mustRead(t, "config/samples/cli_claude.yaml"), &run.Object); err != nil {
		t.Fatal(err)
	}
	run.SetNamespace("team-b")
	if err := admin.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &logs, "the turn's Pod and the sidecar's RoleBinding in team-b", func() bool {
		var pods corev1.PodList
		var rb rbacv1.RoleBinding
		return admin.List(ctx, &pods, client.InNamespace("team-b")) == nil && len(pods.Items) == 1 &&
			admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "turnwatch-sidecar"}, &rb) == nil
	})
	// Owned by the sidecar's ClusterRole, so that `helm uninstall` (which
	// deletes it) has the garbage collector delete the binding too.
	var rb rbacv1.RoleBinding
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "turnwatch-sidecar"}, &rb); err != nil {
		t.Fatal(err)
	}
	if refs := rb.OwnerReferences; len(refs) != 1 || refs[0].Kind != "ClusterRole" || refs[0].Name != "turnwatch-sidecar" {
		t.Errorf("the manager's RoleBinding in team-b is owned by %+v, want the ClusterRole turnwatch-sidecar", refs)
	}
	checkMetrics(t, cfg, admin, metricsAddr, objs)
	time.Sleep(2 * time.Second) // let informers and status writes settle
	stop()
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the API server refused the manager a request: %s", strings.TrimSpace(line))
		}
	}
	if t.Failed() {
		t.Logf("manager log:\n%s", logs.String())
	}
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, logs *testenv.SyncBuffer, what string, cond func() bool) {
	t.Helper()
	err := testenv.WaitFor(context.Background(), time.Minute, 200*time.Millisecond, what, nil, func() (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%v; manager log:\n%s", err, logs.String())
	}
}
