//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The install tests (helm_test.go, readme_test.go) run the operator in the
// cluster, as users do, instead of the suite's local manager process. Two
// managers must never reconcile the same runs, and these tests delete the
// CRDs at their end, so they run in a `go test` of their own:
//
//	TURNWATCH_E2E_INSTALL=1 go test -tags e2e ./test/e2e -run 'TestHelm|TestReadme'
//
// (make test-e2e runs it after the rest). In that mode needOperator refuses
// to start the local manager, and without it these tests skip.
const installModeEnv = "TURNWATCH_E2E_INSTALL"

func installMode() bool { return os.Getenv(installModeEnv) != "" }

func needInstallMode(t *testing.T) {
	t.Helper()
	if !installMode() {
		t.Skipf("installs the operator in the cluster and deletes the CRDs at its end: runs alone, with %s=1 (make test-e2e runs it after the rest)", installModeEnv)
	}
	if pid, ok := demoManagerRunning(); ok {
		t.Fatalf("a manager left by `make demo` runs (pid %d) and would reconcile too: make demo-down", pid)
	}
	// A failed install test leaves its objects for inspection, but not a
	// manager that would reconcile the next suite's runs beside its own.
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = kubectl("-n", releaseNS, "delete", "deployment", "turnwatch-manager", "--ignore-not-found", "--timeout=1m")
		}
	})
}

// demoManagerRunning reports the local manager `make demo` leaves running.
func demoManagerRunning() (int, bool) {
	cache := os.Getenv("TURNWATCH_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "turnwatch")
	}
	b, err := os.ReadFile(filepath.Join(cache, "demo", "manager.pid"))
	if err != nil {
		return 0, false
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
		return 0, false
	}
	_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	return pid, err == nil
}

// The release as README names it.
const (
	releaseName = "turnwatch"
	releaseNS   = "turnwatch-system"
	// installImage holds both binaries, like the Dockerfile's image.
	installImageRepo = "turnwatch.dev/turnwatch"
	installImageTag  = "dev"
)

var tools struct {
	once sync.Once
	err  error
	bin  string // helm (and kubectl links) for the install tests
}

// needTools builds the pinned helm and the kubectl plugin into
// bin/e2e/tools, links the node's kubectl beside them, and packs the one
// image holding both binaries.
func needTools(t *testing.T) string {
	t.Helper()
	tools.once.Do(func() {
		dir := filepath.Join(env.artifacts, "tools")
		if tools.err = os.MkdirAll(dir, 0o755); tools.err != nil {
			return
		}
		for _, build := range [][]string{
			{"go", "build", "-modfile=hack/tools/go.mod", "-o", filepath.Join(dir, "helm"), "helm.sh/helm/v3/cmd/helm"},
			{"go", "build", "-o", filepath.Join(dir, "kubectl-turnwatch"), "./cmd/kubectl-turnwatch"},
		} {
			cmd := exec.Command(build[0], build[1:]...)
			cmd.Dir = env.root
			if out, err := cmd.CombinedOutput(); err != nil {
				tools.err = fmt.Errorf("%s: %v\n%s", strings.Join(build, " "), err, out)
				return
			}
		}
		_ = os.Remove(filepath.Join(dir, "kubectl"))
		if tools.err = os.Symlink(filepath.Join(env.bin, "kubectl"), filepath.Join(dir, "kubectl")); tools.err != nil {
			return
		}
		_, tools.err = script(env.root, "hack/image.sh", "--user", "65532", installImageRepo+":"+installImageTag,
			filepath.Join(env.artifacts, "manager"), filepath.Join(env.artifacts, "turnwatch-sidecar"))
		tools.bin = dir
	})
	if tools.err != nil {
		t.Fatal(tools.err)
	}
	return tools.bin
}

// helm runs the pinned helm against the node.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(needTools(t), "helm"), append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	cmd.Dir = env.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// clearOperator removes what an earlier run may have left on a kept node and
// would collide with the release's objects: a release of an aborted install
// test, the local manager's ServiceAccount, ClusterRole and binding (same
// names as the chart's), the sidecar's ClusterRole and admission policies,
// the per-namespace sidecar identities and the CRDs (and so every AgentRun).
//
// Runs left behind keep the turnwatch.dev/abort finalizer that only a manager
// removes (the suite stops its manager before its namespace is deleted), and
// would hold the CRDs' deletion forever: they lose it first.
func clearOperator(t *testing.T) {
	t.Helper()
	if out, err := kubectl("get", "agentruns", "--all-namespaces", "-o", `jsonpath={range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}`); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			ns, name, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			_, _ = kubectl("-n", ns, "patch", "agentrun", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	}
	_, _ = helm(t, "uninstall", releaseName, "-n", releaseNS, "--ignore-not-found", "--wait")
	steps := [][]string{
		{"delete", "--ignore-not-found", "clusterrolebinding", "turnwatch-manager-e2e"},
		{"delete", "--ignore-not-found", "-f", filepath.Join(env.root, "config", "rbac", "role.yaml")},
		{"delete", "--ignore-not-found", "-f", filepath.Join(env.root, "config", "sidecar", "clusterrole.yaml")},
		{"delete", "--ignore-not-found", "-f", filepath.Join(env.root, "config", "sidecar", "validatingadmissionpolicy.yaml")},
		{"delete", "--ignore-not-found", "-f", filepath.Join(env.root, "config", "sidecar", "validatingadmissionpolicy_limits.yaml")},
		{"delete", "--ignore-not-found", "-f", filepath.Join(env.root, "config", "sidecar", "mutatingadmissionpolicy_attach.yaml")},
		{"delete", "--ignore-not-found", "serviceaccounts,rolebindings", "-A", "-l", "turnwatch.dev/component=sidecar-rbac"},
		{"delete", "--ignore-not-found", "--timeout=3m", "-f", filepath.Join(env.root, "config", "crd", "bases")},
		{"delete", "--ignore-not-found", "--timeout=3m", "namespace", releaseNS},
	}
	for _, args := range steps {
		if _, err := kubectl(args...); err != nil {
			t.Fatalf("clearing what an earlier run left: %v", err)
		}
	}
}

// objectKey names one object of the cluster.
type objectKey struct {
	resource  string // resource.group
	namespace string
	name      string
}

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.resource + " " + k.name
	}
	return k.resource + " " + k.namespace + "/" + k.name
}

// ignoredResources change on their own while a test runs and are not made by
// the chart or the operator: Events (the manager's expire with the API
// server's --event-ttl, 1h; they name objects that no longer exist),
// node heartbeats and the components' own leases in kube-system and
// kube-node-lease are checked by namespace below.
var ignoredResources = map[string]bool{"events": true, "events.events.k8s.io": true}

// ignoredNamespaces hold the node's own objects, which its components
// update and recreate on their own.
var ignoredNamespaces = map[string]bool{"kube-system": true, "kube-node-lease": true}

// snapshot lists every object of every listable resource, cluster-scoped and
// in every namespace (Events and the node's own namespaces aside).
func snapshot(t *testing.T) map[objectKey]bool {
	t.Helper()
	lists, err := env.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		t.Fatalf("discovery: %v", err)
	}
	// The listing touches deprecated resources (v1 Endpoints, ComponentStatus):
	// their warnings would flood the log at every poll.
	cfg := rest.CopyConfig(env.cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[objectKey]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			res := r.Name
			if gv.Group != "" {
				res += "." + gv.Group
			}
			if ignoredResources[res] {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				continue // a CRD going away while we list
			}
			for _, it := range items.Items {
				if ignoredNamespaces[it.GetNamespace()] {
					continue
				}
				out[objectKey{res, it.GetNamespace(), it.GetName()}] = true
			}
		}
	}
	return out
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// leftovers returns the objects of now that before did not have.
func leftovers(before, now map[objectKey]bool) []string {
	var out []string
	for k := range now {
		if !before[k] {
			out = append(out, k.String())
		}
	}
	sort.Strings(out)
	return out
}

// waitNothingLeft waits until the cluster holds no object that was not there
// before the install (garbage collection and namespace deletion take a while).
func waitNothingLeft(t *testing.T, before map[objectKey]bool) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left = leftovers(before, snapshot(t))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	t.Errorf("after the uninstall, %d objects that were not there before the install are left:\n  %s%s", len(left), strings.Join(left, "\n  "), leftPods(left))
}

// leftPods says, for each Pod left, what holds it: its owners, finalizers,
// deletion and phase.
func leftPods(left []string) string {
	var b strings.Builder
	for _, l := range left {
		ns, name, ok := strings.Cut(strings.TrimPrefix(l, "pods "), "/")
		if !ok || !strings.HasPrefix(l, "pods ") {
			continue
		}
		out, _ := kubectl("-n", ns, "get", "pod", name, "-o",
			`jsonpath={.metadata.ownerReferences} finalizers={.metadata.finalizers} deleted={.metadata.deletionTimestamp} phase={.status.phase}`)
		fmt.Fprintf(&b, "\n  pod %s/%s: %s", ns, name, out)
	}
	return b.String()
}
