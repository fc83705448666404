package controllers

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// maxWritesPerTurn is issue 8's budget of API writes per turn, the
// sidecar's included.
const maxWritesPerTurn = 10

// API writes per turn with the real sidecar binary, not a played one: a
// rerolled run (trip, reroll, trip, fault) whose two turns are watched by
// the sidecar built from ./cmd/turnwatch-sidecar, reporting through a proxy that counts
// its writes, while the manager's writes are counted at its transport.
// BenchmarkScale measures the controller's side at scale with a sidecar
// that writes only the trip; this test adds what a real sidecar writes
// (progress, trip, final summary). The kubelet's writes are not counted
// (envtest has none), nor the user's create of the run.
func TestWritesPerTurnRealSidecar(t *testing.T) {
	needEnv(t)
	t.Parallel()
	bin := buildSidecar(t)
	var ctrlWrites, sidecarWrites writeCounter
	kubeconfig := countingKubeconfig(t, &sidecarWrites)
	stream, _ := loopStream(t)

	ns := newNamespace(t)
	presentSidecarRBAC(t, ns) // as the chart makes them: once per namespace, not per turn
	startManager(t, ns, managerOpts{rest: ctrlWrites.wrap(restConfig)})
	create(t, newRun(ns, "w"))
	turns := []string{"w-0", "w-1"}
	for _, name := range turns {
		runSidecar(t, bin, kubeconfig, stream, waitPod(t, ns, name), protocol.ConditionTripped)
		turnSettled(t, ns, name)
	}
	runPhase(t, ns, "w", twv1.RunFaulted)
	waitEvents(t, ns, "w", agentrun.EventFaulted, 1)

	c, cBy := ctrlWrites.snapshot()
	s, sBy := sidecarWrites.snapshot()
	c -= cBy[reviewKey] // once per manager start, not per turn; nothing is stored
	c -= othersPolicies(cBy)
	s -= sBy[readKey] // reads: the API server stores nothing
	perTurn := float64(c+s) / float64(len(turns))
	for _, by := range []map[string]int{cBy, sBy} {
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("%-40s %d", k, by[k])
		}
	}
	t.Logf("writes per turn: %.2f (controller %d + sidecar %d over %d turns; not counted: %d empty patches, %d SelfSubjectReview, %d other tests' ClusterTurnPolicies)",
		perTurn, c, s, len(turns), sBy[readKey], cBy[reviewKey], othersPolicies(cBy))
	if s == 0 {
		t.Fatal("no sidecar write was counted: the proxy was not in the way")
	}
	if perTurn > maxWritesPerTurn {
		t.Errorf("%.2f API writes per turn, want at most %d", perTurn, maxWritesPerTurn)
	}
}

// othersPolicies counts the manager's writes of ClusterTurnPolicies'
// status: no policy applies to this test's fresh namespace, but a
// ClusterTurnPolicy is cluster-scoped, so the manager also reconciles the
// ones the suite's other tests make at the same time.
func othersPolicies(by map[string]int) int {
	n := 0
	for k, v := range by {
		if strings.Contains(k, "/clusterturnpolicies/") {
			n += v
		}
	}
	return n
}

const (
	// reviewKey is the manager's SelfSubjectReview at start (manager_identity.go).
	reviewKey = "POST /apis/authentication.k8s.io/v1/selfsubjectreviews"
	// readKey is the sidecar's empty status patch: its only way to read its
	// Pod (sidecar/kube.go); the API server writes nothing for it.
	readKey = "PATCH pods/status (empty: a read)"
)

// emptyPatch marks a patch whose body is {}, which changes nothing. It
// reads the body and puts it back.
func emptyPatch(req *http.Request) string {
	if req.Method != http.MethodPatch || req.Body == nil {
		return ""
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	if err == nil && string(b) == "{}" {
		return " (empty: a read)"
	}
	return ""
}

// presentSidecarRBAC makes the sidecar's ServiceAccount and RoleBinding as
// the Helm chart does (its managed-by label beside turnwatch's own).
func presentSidecarRBAC(t testing.TB, ns string) {
	t.Helper()
	for _, obj := range agentturn.SidecarRBAC(ns, nil) {
		l := obj.GetLabels()
		l["app.kubernetes.io/managed-by"] = "Helm"
		obj.SetLabels(l)
		create(t, obj)
	}
}

// countingKubeconfig is a kubeconfig for a child process that reaches the
// API server through a local proxy holding the test's credential; the proxy
// counts every request but GET in w.
func countingKubeconfig(t testing.TB, w *writeCounter) string {
	t.Helper()
	target, err := url.Parse(restConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1, // watches and log follows pass through as they come
		Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				w.add(req.Method + " " + resourceOf(req.URL.Path) + emptyPatch(req))
			}
			return rt.RoundTrip(req)
		}),
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["none"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "none"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
