// The sidecar's Kubernetes side on a real kube-apiserver and etcd (envtest):
// its least-privilege Role and admission policy, as shipped in
// config/sidecar, and the reporter and the whole run loop writing through
// the sidecar's own, Pod-bound credential. Runs when KUBEBUILDER_ASSETS is
// set (`make test-envtest`; internal/testenv), skipped otherwise.
package sidecar

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

var (
	testEnv *envtest.Environment
	admin   *kubernetes.Clientset
	// apiCfg is the admin's config; tests derive token configs from it.
	apiCfg *rest.Config
)

func TestMain(m *testing.M) {
	if !testenv.Available() {
		fmt.Println(testenv.SkipNotice())
		os.Exit(m.Run())
	}
	env, cfg, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env
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

// installPolicy creates the shipped ClusterRole of the sidecar and the
// ValidatingAdmissionPolicies with their bindings (config/sidecar).
func installPolicy(ctx context.Context) error {
	c, err := client.New(apiCfg, client.Options{})
	if err != nil {
		return err
	}
	return testenv.InstallSidecarPolicy(ctx, c)
}

// sidecarNamespace is a namespace set up as the manager sets one up: the
// ServiceAccount turnwatch-sidecar bound to the shipped ClusterRole.
func sidecarNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tw-"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "turnwatch-sidecar"}}, metav1.CreateOptions{})
	must(t, err)
	bindRole(t, ctx, ns.Name, ns.Name)
	return ns.Name
}

// bindRole binds the sidecar ClusterRole in ns to the sidecar ServiceAccount of saNS.
func bindRole(t *testing.T, ctx context.Context, ns, saNS string) {
	t.Helper()
	_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "turnwatch-sidecar-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "turnwatch-sidecar"},
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
// token of turnwatch-sidecar bound to pod (nil: bound to nothing), minted
// by a node as only a node may (turnwatch-sidecar-token).
func sidecarToken(t *testing.T, ctx context.Context, ns string, pod *corev1.Pod) string {
	t.Helper()
	node, err := testenv.Node(ctx, testEnv, apiCfg)
	must(t, err)
	var token string
	var last error
	// The authorizer may not have the node's RBAC yet.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		token, last = testenv.PodToken(ctx, node, ns, "turnwatch-sidecar", pod, 0)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("the node mints a token of turnwatch-sidecar: %v", last)
	}
	return token
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
	testenv.Need(t)
	ctx := context.Background()
	ns := sidecarNamespace(t, ctx)
	a, b := agentPod(t, ctx, ns, "a"), agentPod(t, ctx, ns, "b")
	_ = b
	sidecar := kubernetes.NewForConfigOrDie(tokenConfig(sidecarToken(t, ctx, ns, a)))
	unbound := kubernetes.NewForConfigOrDie(tokenConfig(sidecarToken(t, ctx, ns, nil)))
	waitForPolicy(t, ctx, sidecar, ns, "b")

	// Someone bound the ClusterRole in a second namespace to the sidecar of the
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
		{ns, "b", "log", "get", true}, // the limit RBAC cannot draw: see config/sidecar/clusterrole.yaml
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

	// On AgentRuns, RBAC grants a status patch in the namespace and nothing
	// else: no read (a run holds its prompt), no spec, no update. Which run,
	// and which fields, the policy turnwatch-sidecar-run-progress decides
	// (controllers/run_progress_test.go, on a real run).
	runs := []struct {
		ns, sub, verb string
		allowed       bool
	}{
		{ns, "status", "patch", true},
		{"default", "status", "patch", false},
		{ns, "status", "update", false},
		{ns, "status", "get", false},
		{ns, "", "get", false},
		{ns, "", "list", false},
		{ns, "", "patch", false},
		{ns, "", "delete", false},
	}
	for _, r := range runs {
		review, err := sidecar.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: r.ns, Verb: r.verb, Group: "turnwatch.dev", Resource: "agentruns", Subresource: r.sub, Name: "any"}},
		}, metav1.CreateOptions{})
		must(t, err)
		if review.Status.Allowed != r.allowed {
			t.Errorf("%s agentruns/%s in %s: allowed=%v, want %v", r.verb, r.sub, r.ns, review.Status.Allowed, r.allowed)
		}
	}
}

func selfReview(ns, pod, sub, verb string) *authorizationv1.SelfSubjectAccessReview {
	return &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods", Subresource: sub, Name: pod},
	}}
}

// conditionsOf reads the Pod's turnwatch conditions with the admin client.
func conditionsOf(t *testing.T, ctx context.Context, ns, name string) (map[string]corev1.PodCondition, string) {
	t.Helper()
	pod, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	out := map[string]corev1.PodCondition{}
	for _, c := range pod.Status.Conditions {
		out[string(c.Type)] = c
	}
	return out, pod.ResourceVersion
}

type wantCondition struct{ typ, reason, message string }

func checkConditions(t *testing.T, got map[string]corev1.PodCondition, want []wantCondition) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d conditions, want %d: %+v", len(got), len(want), got)
	}
	for _, w := range want {
		c, ok := got[w.typ]
		if !ok || c.Status != corev1.ConditionTrue || c.Reason != w.reason || c.Message != w.message || c.LastTransitionTime.IsZero() {
			t.Errorf("%s = %+v\nwant True %s/%s with a transition time", w.typ, c, w.reason, w.message)
		}
	}
}

// The reporter, with the sidecar's own credential, on a real API server.
func TestReporterOnAPIServer(t *testing.T) {
	testenv.Need(t)
	ctx := context.Background()
	ns := sidecarNamespace(t, ctx)
	const loopMsg = "repeated an identical tool call 4 times"
	const nudge = "13 tool-only model messages since the agent last spoke"
	summary := protocol.Summary{Progress: counts(9, "0.42"), StopReason: "length", Lines: 30}
	cases := []struct {
		name string
		do   func(ctx context.Context, r *reporter) error
		want []wantCondition
	}{
		{name: "nudged, then tripped", do: func(ctx context.Context, r *reporter) error {
			if err := r.silent(ctx, detectorSilentRun, nudge); err != nil {
				return err
			}
			r.progress(ctx, counts(3, "0.12"))
			return r.tripped(ctx, "identicalCalls", loopMsg, counts(4, "0.15"))
		}, want: []wantCondition{
			{protocol.ConditionSilent, "SilentRun", protocol.NudgeMessage(1, nudge)},
			{protocol.ConditionProgress, "Running", `{"steps":4,"costUSD":"0.15"}`},
			{protocol.ConditionTripped, "IdenticalCalls", loopMsg},
		}},
		{name: "length stop with the summary", do: func(ctx context.Context, r *reporter) error {
			return r.finished(ctx, summary, &desired{Type: protocol.ConditionTripped, Reason: "LengthStop", Message: "stopped at the output length limit"})
		}, want: []wantCondition{
			{protocol.ConditionTripped, "LengthStop", "stopped at the output length limit"},
			{protocol.ConditionFinished, "NoResult", `{"steps":9,"costUSD":"0.42","stopReason":"length","result":false,"lines":30,"unparsed":0,"complete":false}`},
		}},
		{name: "finished with a result", do: func(ctx context.Context, r *reporter) error {
			return r.finished(ctx, protocol.Summary{Progress: counts(2, "0.01"), StopReason: "end", Result: true, Lines: 7}, nil)
		}, want: []wantCondition{
			{protocol.ConditionFinished, "Result", `{"steps":2,"costUSD":"0.01","stopReason":"end","result":true,"lines":7,"unparsed":0,"complete":false}`},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(t, ctx, ns, fmt.Sprintf("turn-%d", i))
			client := mustKubeClient(tokenConfig(sidecarToken(t, ctx, ns, pod)))
			ps := &podStatus{client: client, namespace: ns, name: pod.Name}
			newReporter := func() *reporter {
				r := &reporter{pod: ps, clock: clock.RealClock{}, backoff: defaultBackoff, period: 15 * time.Second, log: testLogger(t)}
				must(t, r.load(ctx))
				return r
			}

			// Reading through an empty patch writes nothing.
			_, rv := conditionsOf(t, ctx, ns, pod.Name)
			if got, err := ps.read(ctx); err != nil || got.ResourceVersion != rv {
				t.Fatalf("read: %v; resourceVersion %s -> %s", err, rv, got.ResourceVersion)
			}

			must(t, tc.do(ctx, newReporter()))
			got, rv := conditionsOf(t, ctx, ns, pod.Name)
			checkConditions(t, got, tc.want)

			// A restarted sidecar saying it all again writes nothing.
			again := newReporter()
			must(t, tc.do(ctx, again))
			if _, rv2 := conditionsOf(t, ctx, ns, pod.Name); rv2 != rv || again.writes != 0 {
				t.Fatalf("the second reporter wrote %d times (resourceVersion %s -> %s)", again.writes, rv, rv2)
			}
		})
	}
}

// frontServer stands where the API server stands for the sidecar: it serves
// pods/log itself (envtest has no kubelet behind it) and passes every other
// request to the real API server, with the sidecar's own token. It counts
// the writes: status patches that are not the empty read.
type frontServer struct {
	log    *fakeLogServer
	proxy  *httputil.ReverseProxy
	mu     sync.Mutex
	writes int
}

func newFrontServer(t *testing.T, log *fakeLogServer) *httptest.Server {
	t.Helper()
	target, err := url.Parse(apiCfg.Host)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(apiCfg.CAData)
	f := &frontServer{log: log, proxy: &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { t.Logf("status writes through the front: %d", f.count()) })
	frontServers[srv] = f
	return srv
}

var frontServers = map[*httptest.Server]*frontServer{}

func (f *frontServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *frontServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/log") {
		f.log.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPatch {
		body, _ := io.ReadAll(r.Body)
		if string(body) != "{}" {
			f.mu.Lock()
			f.writes++
			f.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	f.proxy.ServeHTTP(w, r)
}

// terminate marks the agent container terminated, as the kubelet would.
func terminate(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	pod, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	now := metav1.Now()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "agent:test", ImageID: "agent@sha256:0",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, StartedAt: now, FinishedAt: now}}}}
	_, err = admin.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	must(t, err)
}

// The whole `run` wiring (in-cluster shape: pods/log and pods/status with
// the Pod-bound token) against the real API server, with drops in the log.
func TestRunThroughTheAPIServer(t *testing.T) {
	testenv.Need(t)
	ctx := context.Background()
	ns := sidecarNamespace(t, ctx)
	cases := []struct {
		name    string
		lines   []string
		drops   []drop
		settled string
		want    []wantCondition
	}{
		{name: "a loop trips", lines: loopTurn(6), settled: protocol.ConditionTripped,
			drops: []drop{{after: 3, abort: true}, {after: 2, half: true, abort: true}},
			want: []wantCondition{
				{protocol.ConditionProgress, "Running", `{"steps":4,"costUSD":"0.00135"}`},
				{protocol.ConditionTripped, "IdenticalCalls", "repeated an identical tool call 4 times"},
			}},
		{name: "a healthy turn finishes", lines: healthyTurn(), settled: protocol.ConditionFinished,
			drops: []drop{{after: 1, abort: true}, {after: 1, half: true}},
			// No Progress: the first waits a period (an hour here), and
			// the summary carries the counts.
			want: []wantCondition{
				{protocol.ConditionFinished, "Result", `{"steps":1,"costUSD":"0.01","stopReason":"end","result":true,"lines":5,"unparsed":0,"agentSessionID":"s1","complete":true}`},
				// The stream has no stream_event deltas; told in the summary's write.
				{protocol.ConditionDeltasHidden, protocol.ReasonDeltasHidden, monitor.DeltasHiddenMessage(monitor.FormatClaude)},
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := agentPod(t, ctx, ns, fmt.Sprintf("run-%d", i))
			terminate(t, ctx, ns, pod.Name) // the agent wrote it all and exited
			logs := &fakeLogServer{t: t, path: "/api/v1/namespaces/" + ns + "/pods/" + pod.Name + "/log",
				entries: timedLog(tc.lines, time.Now().Add(-time.Minute), 100*time.Millisecond), drops: tc.drops}
			front := newFrontServer(t, logs)
			token := sidecarToken(t, ctx, ns, pod)

			runOnce := func() {
				t.Helper()
				client := mustKubeClient(&rest.Config{Host: front.URL, BearerToken: token})
				cfg := Options{Format: "claude", Guards: monitor.DefaultGuards(), Prices: monitor.DefaultPrices(),
					PodName: pod.Name, Namespace: ns, AgentContainer: "agent", ProgressPeriod: time.Hour,
					Drain: time.Second, WriteGrace: 5 * time.Second}
				r := newRunner(cfg, client, testLogger(t))
				sig, term := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- r.run(sig) }()
				must(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					got, _ := conditionsOf(t, ctx, ns, pod.Name)
					_, ok := got[tc.settled]
					return ok, nil
				}))
				term()
				must(t, <-done)
			}
			runOnce()
			got, _ := conditionsOf(t, ctx, ns, pod.Name)
			checkConditions(t, got, tc.want)
			first := frontServers[front].count()

			runOnce() // the sidecar restarted: it reports nothing twice
			if again := frontServers[front].count() - first; again != 0 {
				t.Fatalf("the restarted sidecar wrote %d times", again)
			}
			t.Logf("writes: %d; log connections: %d (sinceTime %q)", first, logs.conns, logs.since)
		})
	}
}
