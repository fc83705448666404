//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The manager's metrics on the local node (hack/local-node-values.yaml).
const localMetricsURL = "https://127.0.0.1:8443/metrics"

// TestHelmChart installs the operator as users do: `helm install` of
// charts/turnwatch, the manager as a Deployment in the cluster (leader
// election, probes, metrics over HTTPS), with the values the local node
// needs (hack/local-node-values.yaml). A looping run trips, is rerolled and
// faults; `kubectl turnwatch explain` tells it; the metrics endpoint serves
// the trips to a reader's token only, and a real Prometheus scraping it with
// such a token answers every query of the chart's Grafana dashboard;
// `helm upgrade` with a new guard applies to the runs started after it and
// leaves a running one alone; `helm uninstall`, the per-namespace sidecar
// identities and the CRDs removed, the cluster holds nothing it did not hold
// before the install.
func TestHelmChart(t *testing.T) {
	needInstallMode(t)
	needTools(t)
	clearOperator(t)
	before := snapshot(t)
	start := time.Now()

	installRelease(t, "--set", "guards.identicalCalls=4")
	env.report.add("helm install to a Ready manager", time.Since(start))
	watchTurnwatch()
	managerPod := checkManagerPod(t)
	checkLease(t, managerPod)
	// Prometheus scrapes from before the first trip, so the counters'
	// increase and the duration histogram's rate are real.
	prom := startPrometheus(t)

	// A sample run trips, rerolls and faults.
	spec := runSpec{scenario: "identicalLoop", format: "claude", speed: 4}
	createRun(t, "helm-looping", spec)
	waitRun(t, "helm-looping", 3*time.Minute)
	checkTripStory(t, "helm-looping", spec, tripStory{detector: "identicalCalls", class: "runaway", attempts: 2})
	checkExplain(t, "helm-looping")
	// An audited loop: its would-trips feed the dashboard's audit panel.
	auditNS, _, _ := auditedLoop(t, "helm-audit")

	checkMetricsAuth(t)
	checkDashboardQueries(t, prom, 2, 1)
	prom.stop()

	checkUpgrade(t, managerPod)

	// The uninstall, as README tells it: the runs first, while the manager
	// runs and can release their finalizers, in the foreground (their Pods
	// go before the CRDs).
	if _, err := kubectl("delete", "agentruns", "--all", "--all-namespaces", "--cascade=foreground", "--timeout=2m"); err != nil {
		t.Fatal(err)
	}
	checkSidecarRBACOwned(t)
	if _, err := helm(t, "uninstall", releaseName, "-n", releaseNS, "--wait"); err != nil {
		t.Fatal(err)
	}
	waitSidecarRBACCollected(t)
	for _, args := range [][]string{
		// Bindings an older manager made carry no owner: README's step.
		{"delete", "serviceaccounts,rolebindings", "-A", "-l", "turnwatch.dev/component=sidecar-rbac"},
		{"delete", "--timeout=3m", "-f", filepath.Join(env.root, "charts", "turnwatch", "crds")},
		{"delete", "--timeout=3m", "namespace", releaseNS},
		{"delete", "--timeout=3m", "namespace", auditNS},
	} {
		if _, err := kubectl(args...); err != nil {
			t.Fatal(err)
		}
	}
	waitNothingLeft(t, before)
	env.report.add("helm install to nothing left (whole test)", time.Since(start))
}

// checkExplain: `kubectl turnwatch explain` of a faulted run shows both turns
// and the tripping streak of the last one, with the detector's message; the
// JSON says the same for tools.
func checkExplain(t *testing.T, run string) {
	t.Helper()
	bin := needTools(t)
	cmd := exec.Command(filepath.Join(bin, "kubectl"), "turnwatch", "explain", run, "-n", env.ns)
	// kubectl finds its plugins on PATH, and hands the kubeconfig on through the env.
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl turnwatch explain %s: %v\n%s", run, err, out)
	}
	text := string(out)
	wants := []string{"AgentRun " + env.ns + "/" + run + ": Faulted (runaway, identicalCalls)", run + "-0", run + "-1",
		"turn " + run + "-1, its agent's stream:", "TRIPPED identicalCalls (runaway) at line", "repeated an identical tool call 4 times",
		">>", "#4 Grep", "(identical x4)"}
	if missing, ok := containsAll(text, wants...); !ok {
		t.Errorf("kubectl turnwatch explain lacks %q:\n%s", missing, text)
	}
	if strings.Contains(text, "\x1b[") {
		t.Errorf("colour on output that is not a terminal:\n%s", text)
	}
	t.Logf("kubectl turnwatch explain %s:\n%s", run, text)
	js, err := exec.Command(filepath.Join(bin, "kubectl-turnwatch"), "explain", run, "-n", env.ns, "-o", "json", "--kubeconfig", env.kubeconfig).Output()
	if err != nil {
		t.Fatalf("kubectl-turnwatch -o json: %v", err)
	}
	var r explain.Run
	if err := json.Unmarshal(js, &r); err != nil {
		t.Fatalf("kubectl-turnwatch -o json: %v\n%s", err, js)
	}
	if r.Stream == nil || len(r.Turns) != 2 || r.StreamTurn != run+"-1" || len(r.Stream.Report.Trips) != 1 ||
		r.Stream.Report.Trips[0].Detector != "identicalCalls" {
		t.Errorf("kubectl-turnwatch -o json: %s", js)
	}
}

var watchOnce sync.Once

// watchTurnwatch starts the observer's AgentRun and AgentTurn informers once
// the CRDs exist (the first install of this process).
func watchTurnwatch() {
	watchOnce.Do(func() { env.obs.startTurnwatch(context.Background(), env.ns) })
}

// installRelease runs helm install with the local node's values, the image
// holding both binaries, and the e2e's short start and exit timeouts.
func installRelease(t *testing.T, extra ...string) {
	t.Helper()
	args := append([]string{"install", releaseName, "charts/turnwatch", "--namespace", releaseNS, "--create-namespace",
		"-f", "hack/local-node-values.yaml",
		"--set", "image.repository=" + installImageRepo, "--set", "image.tag=" + installImageTag,
		"--set", "startTimeout=" + e2eStartTimeout.String(), "--set", "exitGrace=" + e2eExitGrace.String(),
		"--wait", "--timeout", "3m"}, extra...)
	if out, err := helm(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, releaseDebug())
	} else {
		t.Logf("helm install:\n%s", tail(out, 6))
	}
}

// releaseDebug is what a failing install test shows: the manager's Pods and
// the tail of their logs.
func releaseDebug() string {
	var b strings.Builder
	out, _ := kubectl("-n", releaseNS, "describe", "pods", "-l", "app.kubernetes.io/component=manager")
	b.WriteString(out)
	out, _ = kubectl("-n", releaseNS, "logs", "-l", "app.kubernetes.io/component=manager", "--tail=40", "--all-containers", "--prefix")
	b.WriteString("--- manager log tail\n" + out)
	return b.String()
}

// managerPods lists the release's manager Pods that are not being deleted.
func managerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := env.kube.CoreV1().Pods(releaseNS).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + releaseName + ",app.kubernetes.io/component=manager"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkManagerPod checks the one manager Pod: Ready (the readiness probe on
// loopback passed), never restarted (the liveness probe holds), running the
// image and flags of the chart. It returns the Pod's name.
func checkManagerPod(t *testing.T) string {
	t.Helper()
	pods := managerPods(t)
	if len(pods) != 1 {
		t.Fatalf("%d manager Pods, want 1\n%s", len(pods), releaseDebug())
	}
	p := pods[0]
	ready, _ := podCondition(&p, string(corev1.PodReady))
	if ready.Status != corev1.ConditionTrue {
		t.Errorf("manager Pod %s not Ready: %+v", p.Name, ready)
	}
	c := p.Spec.Containers[0]
	if want := installImageRepo + ":" + installImageTag; c.Image != want {
		t.Errorf("manager image %s, want %s", c.Image, want)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe.HTTPGet == nil {
		t.Errorf("manager container lacks its probes: %+v", c)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--leader-elect=true", "--sidecar-image=" + installImageRepo + ":" + installImageTag} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %q lack %q", args, want)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount != 0 {
			t.Errorf("manager container %s restarted %d times\n%s", cs.Name, cs.RestartCount, releaseDebug())
		}
	}
	return p.Name
}

// checkLease: the manager that reconciles holds the leader-election Lease
// (controller-runtime's identity is the Pod's hostname, which on
// hostNetwork is the node's, plus a unique suffix); wait for it, as a new
// leader waits out the old lease.
func checkLease(t *testing.T, pod string) string {
	t.Helper()
	var holder string
	err := waitFor(context.Background(), 90*time.Second, "the manager's leader-election Lease", func() (bool, error) {
		l, err := env.kube.CoordinationV1().Leases(releaseNS).Get(context.Background(), "turnwatch.dev", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		return holder != "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, releaseDebug())
	}
	t.Logf("Lease turnwatch.dev held by %s (manager Pod %s)", holder, pod)
	return holder
}

// scrape GETs the manager's metrics with a bearer token ("" for none).
func scrape(token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, localMetricsURL, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The manager serves a self-signed certificate (controller-runtime's
	// default when none is mounted); what is checked here is who may read.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, loopback
	}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metricsReaderToken makes a ServiceAccount in the test namespace bound to
// the chart's metrics-reader ClusterRole and returns its token and a func
// that removes both (they are the test's, not the chart's).
func metricsReaderToken(t *testing.T, name string) (string, func()) {
	t.Helper()
	binding := "e2e-" + name
	steps := [][]string{
		{"-n", env.ns, "create", "serviceaccount", name},
		{"create", "clusterrolebinding", binding, "--clusterrole=turnwatch-metrics-reader", "--serviceaccount=" + env.ns + ":" + name},
	}
	for _, args := range steps {
		if out, err := kubectl(args...); err != nil && !strings.Contains(out, "already exists") {
			t.Fatal(err)
		}
	}
	remove := func() {
		_, _ = kubectl("delete", "--ignore-not-found", "clusterrolebinding", binding)
		_, _ = kubectl("-n", env.ns, "delete", "--ignore-not-found", "serviceaccount", name)
	}
	t.Cleanup(remove)
	token, err := kubectl("-n", env.ns, "create", "token", name, "--duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(token), remove
}

// checkMetricsAuth: no token is refused, the default ServiceAccount's token is
// forbidden, and a token bound to turnwatch-metrics-reader reads the trips.
func checkMetricsAuth(t *testing.T) {
	t.Helper()
	if code, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d %v, want 401", code, err)
	}
	other, err := kubectl("-n", env.ns, "create", "token", "default", "--duration=10m")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, err := scrape(strings.TrimSpace(other)); err != nil || code != http.StatusForbidden {
		t.Errorf("metrics with a token not bound to the reader role: %d %v, want 403", code, err)
	}
	token, remove := metricsReaderToken(t, "metrics-scraper")
	defer remove()
	code, body, err := scrape(token)
	if err != nil || code != http.StatusOK {
		t.Fatalf("metrics with the reader's token: %d %v", code, err)
	}
	want := `turnwatch_trips_total{class="runaway",detector="identicalCalls",drill="",mode="enforce"} 2`
	if !strings.Contains(body, want) {
		t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "turnwatch_"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// checkUpgrade: a run that is running when `helm upgrade` changes a guard
// keeps its Pod and its guards; a run started after the upgrade gets the new
// guard (identicalCalls 3 trips at the third identical call).
func checkUpgrade(t *testing.T, oldManager string) {
	t.Helper()
	ctx := context.Background()
	// About 50 s of varied tool calls: it runs through the manager's restart
	// (the upgrade to a Ready manager holding the lease takes about 20 s).
	createRun(t, "helm-running", runSpec{scenario: "silentRun", format: "claude", speed: 0.5})
	running := waitPodOfRun(t, "helm-running")
	pod, err := env.kube.CoreV1().Pods(env.ns).Get(ctx, running, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldGuards := sidecarGuards(t, pod)
	if oldGuards["identicalCalls"] != float64(4) {
		t.Fatalf("the running turn's guards %v, want identicalCalls 4", oldGuards)
	}

	start := time.Now()
	if _, err := helm(t, "upgrade", releaseName, "charts/turnwatch", "--namespace", releaseNS, "--reuse-values",
		"--set", "guards.identicalCalls=3", "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("%v\n%s", err, releaseDebug())
	}
	// The config's checksum rolled the manager: a new Pod, which must win the lease.
	err = waitFor(ctx, 2*time.Minute, "the old manager Pod to go", func() (bool, error) {
		pods := managerPods(t)
		return len(pods) == 1 && pods[0].Name != oldManager, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, releaseDebug())
	}
	newManager := checkManagerPod(t)
	checkLease(t, newManager)
	env.report.add("helm upgrade to a new manager", time.Since(start))

	spec := runSpec{scenario: "identicalLoop", format: "claude", speed: 4, rerolls: ptr(int64(0))}
	createRun(t, "helm-after-upgrade", spec)
	r := waitRun(t, "helm-after-upgrade", 3*time.Minute)
	if msg := str(r, "status", "fault", "message"); !strings.Contains(msg, "3 times") {
		t.Errorf("a run started after the upgrade faulted with %q, want the new identicalCalls 3\n%s", msg, debugRun("helm-after-upgrade"))
	}

	// The running one: same Pod, same guards, and it ends as it would have.
	done := waitRun(t, "helm-running", 4*time.Minute)
	now, err := env.kube.CoreV1().Pods(env.ns).Get(ctx, running, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.UID != pod.UID {
		t.Errorf("the running turn's Pod was replaced across the upgrade")
	}
	if g := sidecarGuards(t, now); g["identicalCalls"] != float64(4) {
		t.Errorf("the running turn's guards changed to %v", g)
	}
	if str(done, "status", "phase") != "Succeeded" || num(done, "status", "attempts") != 1 {
		t.Errorf("the run that ran through the upgrade: phase %s after %d attempts, want Succeeded after 1\n%s",
			str(done, "status", "phase"), num(done, "status", "attempts"), debugRun("helm-running"))
	}
}

// sidecarGuards are the guards the manager gave a turn's sidecar.
func sidecarGuards(t *testing.T, p *corev1.Pod) map[string]any {
	t.Helper()
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name != protocol.SidecarContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == protocol.EnvGuards {
				var g map[string]any
				if err := json.Unmarshal([]byte(e.Value), &g); err != nil {
					t.Fatalf("%s of Pod %s: %v", e.Name, p.Name, err)
				}
				return g
			}
		}
	}
	t.Fatalf("Pod %s has no sidecar with %s", p.Name, protocol.EnvGuards)
	return nil
}
