package controllers

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// BenchmarkManagerMemory: N AgentRuns (default 1,000,
// TURNWATCH_MEM_RUNS) with 16 KiB prompts, each with its turn and its Pod
// (Pending: envtest has no kubelet), then the manager's live heap with
// every one of them in its cache, for the cache as configured
// (CacheByObject: trimmed) and, in the same run on the same objects, for
// the cache as it was before the transforms (untrimmed: the baseline). The
// figure is the Go heap still live after a GC with the manager running
// (both controllers, caches synced, reconciles done), over the heap of the
// same process without a manager; `rss-MiB` is the process's resident set
// with the trimmed manager running, the benchmark's own client included.
//
//	make bench-memory
//	TURNWATCH_MEM_RUNS=5000 make bench-memory
func BenchmarkManagerMemory(b *testing.B) {
	needEnv(b)
	n := 1000
	if s := os.Getenv("TURNWATCH_MEM_RUNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for range b.N {
		runMemory(b, n)
	}
}

func runMemory(b *testing.B, n int) {
	ns := newNamespace(b)
	helmRBAC(b, ns)
	const sentence = "Fix the failing test in ./pkg/foo and explain why. "
	prompt := strings.Repeat(sentence, 16<<10/len(sentence)+1)[:16<<10]
	maker := startManager(b, ns, managerOpts{})
	start := time.Now()
	for i := range n {
		create(b, newRun(ns, "m"+strconv.Itoa(i), func(r *twv1.AgentRun) { r.Spec.Prompt = prompt }))
	}
	waitPods(b, ns, n)
	b.Logf("%d runs with their turns and Pods in %s", n, time.Since(start).Round(time.Second))
	maker.stop()

	base := liveHeap()
	trimmed, rss := managerHeap(b, ns, CacheByObject())
	untrimmed, _ := managerHeap(b, ns, untrimmedCache())
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(mib(trimmed-base), "MiB-trimmed")
	b.ReportMetric(mib(untrimmed-base), "MiB-untrimmed")
	b.ReportMetric(float64(untrimmed-base)/float64(trimmed-base), "x-smaller")
	b.ReportMetric(float64(trimmed-base)/float64(n)/1024, "KiB/run-trimmed")
	b.ReportMetric(float64(untrimmed-base)/float64(n)/1024, "KiB/run-untrimmed")
	b.ReportMetric(mib(rss), "rss-MiB")
}

// untrimmedCache is the cache before the transforms: the same label
// selectors, every object stored whole.
func untrimmedCache() map[client.Object]cache.ByObject {
	hasRun, _ := labels.NewRequirement(twv1.LabelRun, selection.Exists, nil)
	ours := labels.SelectorFromSet(labels.Set{agentturn.LabelComponent: agentturn.ComponentSidecarRBAC})
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:            {Label: labels.NewSelector().Add(*hasRun)},
		&corev1.ServiceAccount{}: {Label: ours},
		&rbacv1.RoleBinding{}:    {Label: ours},
	}
}

// waitPods waits for n turn Pods, counting them by metadata alone.
func waitPods(b *testing.B, ns string, n int) {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d pods", len(list.Items), n)
		}
		time.Sleep(2 * time.Second)
	}
}

// managerHeap starts a manager with byObject, waits for its caches and its
// first reconciles, and returns the live heap and the RSS; it stops the
// manager before it returns.
func managerHeap(b *testing.B, ns string, byObject map[client.Object]cache.ByObject) (heap, rss uint64) {
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, ByObject: byObject},
	})
	if err != nil {
		b.Fatal(err)
	}
	empty := func(context.Context, string, string, string, int64) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err := Setup(mgr, Options{Config: shared.DefaultConfig(), SidecarImage: "turnwatch-sidecar:test", Concurrency: 4, LogTail: empty, Namespaces: map[string]cache.Config{ns: {}}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	defer func() { cancel(); <-done }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	time.Sleep(20 * time.Second) // the first pass over every run and turn
	return liveHeap(), vmRSS()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// vmRSS is this process's resident set, from /proc/self/status.
func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
