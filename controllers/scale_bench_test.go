package controllers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// writeCounter counts the API writes that pass through a transport, by
// verb and resource path kind.
type writeCounter struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

func (w *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				w.add(req.Method + " " + resourceOf(req.URL.Path))
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (w *writeCounter) add(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[string]int{}
	}
	w.total++
	w.by[key]++
}

func (w *writeCounter) snapshot() (int, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]int{}
	for k, v := range w.by {
		m[k] = v
	}
	return w.total, m
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf turns /api/v1/namespaces/ns/pods/x/status into pods/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return path
}

// BenchmarkScale: N AgentRuns (default 500, TURNWATCH_SCALE_RUNS) on the
// envtest API server, each tripped, rerolled, tripped again and faulted.
// The benchmark plays the sidecar: it writes the Tripped condition on each
// Pod as soon as it appears. It reports the wall time, the p50/p99 time
// from the sidecar's condition write to the turn's recorded outcome and to
// the run's Faulted status, and the API writes per turn (the controller's
// and the sidecar's, counted at the transport; the user's creates apart).
//
// With TURNWATCH_SCALE_PROGRESS=1 each sidecar first reports progress once,
// as a real one does on its first counts (one merge patch of its run's
// status), and its trip carries the counts (a short turn of a real agent).
//
//	make bench-scale                          # 500 runs at once
//	TURNWATCH_SCALE_RATE=20 make bench-scale  # 20 new runs a second
func BenchmarkScale(b *testing.B) {
	needEnv(b)
	n, rate := 500, 0.0
	scaleProgress = os.Getenv("TURNWATCH_SCALE_PROGRESS") == "1"
	if s := os.Getenv("TURNWATCH_SCALE_RUNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("TURNWATCH_SCALE_RATE"); s != "" {
		rate, _ = strconv.ParseFloat(s, 64)
	}
	for range b.N {
		runScale(b, n, rate)
	}
}

// runScale creates n runs, all at once (rate 0: the burst measures
// throughput, and the reaction times are mostly queueing) or rate per second
// (the reaction times of a controller that keeps up).
func runScale(b *testing.B, n int, rate float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(b)
	helmRBAC(b, ns)
	var ctrlWrites, sidecarWrites writeCounter
	startManager(b, ns, managerOpts{rest: ctrlWrites.wrap(restConfig)})
	sidecar, err := client.New(sidecarWrites.wrap(restConfig), client.Options{Scheme: testScheme})
	if err != nil {
		b.Fatal(err)
	}

	// Watch Pods, turns and runs as a user would, through informers.
	informers, err := cache.New(restConfig, cache.Options{Scheme: testScheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu        sync.Mutex
		tripAt    = map[string]time.Time{} // turn -> condition write start
		turnLat   []time.Duration          // condition -> turn outcome
		runLat    []time.Duration          // second condition -> run Faulted
		faulted   atomic.Int64
		seenTurns = map[string]bool{}
		seenRuns  = map[string]bool{}
		pods      = make(chan *corev1.Pod, 2*n)
	)
	podInf, _ := informers.GetInformer(ctx, &corev1.Pod{})
	_, _ = podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		pods <- obj.(*corev1.Pod)
	}})
	turnInf, _ := informers.GetInformer(ctx, &twv1.AgentTurn{})
	_, _ = turnInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		t := obj.(*twv1.AgentTurn)
		if t.Status.Outcome == "" {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if at, ok := tripAt[t.Name]; ok && !seenTurns[t.Name] {
			seenTurns[t.Name] = true
			turnLat = append(turnLat, now.Sub(at))
		}
	}})
	runInf, _ := informers.GetInformer(ctx, &twv1.AgentRun{})
	_, _ = runInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		r := obj.(*twv1.AgentRun)
		if r.Status.Phase != twv1.RunFaulted {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if at, ok := tripAt[r.Name+"-1"]; ok && !seenRuns[r.Name] {
			seenRuns[r.Name] = true
			runLat = append(runLat, now.Sub(at))
			faulted.Add(1)
		}
	}})
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)

	// The sidecars: trip every Pod as soon as it appears.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range pods {
				name := p.Name
				if scaleProgress {
					if err := scaleReport(ctx, sidecar, p); err != nil && ctx.Err() == nil {
						b.Errorf("progress %s: %v", name, err)
					}
				}
				mu.Lock()
				tripAt[name] = time.Now()
				mu.Unlock()
				body := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"IdenticalCalls","message":"repeated an identical tool call 4 times","lastTransitionTime":%q}%s]}}`,
					"turnwatch.dev/Tripped", time.Now().UTC().Format(time.RFC3339), scaleTripProgress())
				pod := &corev1.Pod{}
				pod.Namespace, pod.Name = ns, name
				if err := sidecar.Status().Patch(ctx, pod, client.RawPatch("application/strategic-merge-patch+json", []byte(body))); err != nil && ctx.Err() == nil {
					b.Errorf("trip %s: %v", name, err)
				}
			}
		}()
	}

	b.ResetTimer()
	start := time.Now()
	for i := range n {
		create(b, newRun(ns, fmt.Sprintf("s%04d", i)))
		if rate > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i+1) / rate * float64(time.Second)))))
		}
	}
	deadline := time.Now().Add(20 * time.Minute)
	for faulted.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d runs faulted", faulted.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	total := time.Since(start)
	b.StopTimer()
	close(pods)
	wg.Wait()
	time.Sleep(time.Second) // let the last events be written before counting

	cw, cby := ctrlWrites.snapshot()
	sw, _ := sidecarWrites.snapshot()
	turns := 2 * n
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(total.Seconds(), "s/total")
	b.ReportMetric(ms(percentile(turnLat, 50)), "ms-turn-p50")
	b.ReportMetric(ms(percentile(turnLat, 99)), "ms-turn-p99")
	b.ReportMetric(ms(percentile(runLat, 50)), "ms-fault-p50")
	b.ReportMetric(ms(percentile(runLat, 99)), "ms-fault-p99")
	b.ReportMetric(float64(cw+sw)/float64(turns), "writes/turn")
	b.ReportMetric(float64(cw)/float64(turns), "ctrl-writes/turn")
	keys := make([]string, 0, len(cby))
	for k := range cby {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.Logf("controller writes %-28s %6d  (%.2f per turn)", k, cby[k], float64(cby[k])/float64(turns))
	}
	b.Logf("sidecar writes %d (%.2f per turn); %d runs, %d turns in %s", sw, float64(sw)/float64(turns), n, turns, total.Round(time.Millisecond))
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// helmRBAC makes the namespace's sidecar RBAC as the chart does (labelled
// managed-by Helm), as on a cluster installed with Helm: the manager must
// see these in its cache and create nothing per Pod.
func helmRBAC(b *testing.B, ns string) {
	for _, obj := range agentturn.SidecarRBAC(ns, nil) {
		l := obj.GetLabels()
		l["app.kubernetes.io/managed-by"] = "Helm"
		obj.SetLabels(l)
		create(b, obj)
	}
}

// scaleProgress: the simulated sidecars report progress once before they
// trip (TURNWATCH_SCALE_PROGRESS=1).
var scaleProgress bool

// scaleOwn are the counts every simulated turn reports.
const scaleOwnSteps, scaleOwnCost = 3, "0.0125"

// scaleReport is a real sidecar's progress report: its run's totals (the
// earlier turns' counts, from the env the controller gave the sidecar, plus
// its own) and its own counts, in one merge patch of the run's status.
func scaleReport(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	env := sidecarEnv(pod)
	prior, _ := strconv.ParseInt(env[protocol.EnvPriorSteps], 10, 64)
	body := fmt.Sprintf(`{"status":{"steps":%d,"costUSD":%q,"progress":{"turn":%q,"steps":%d,"costUSD":%q,"time":%q}}}`,
		prior+scaleOwnSteps, shared.SumUSD(env[protocol.EnvPriorCostUSD], scaleOwnCost), pod.Name, scaleOwnSteps, shared.SumUSD(scaleOwnCost),
		time.Now().UTC().Format(time.RFC3339))
	run := &twv1.AgentRun{}
	run.Namespace, run.Name = pod.Namespace, pod.Labels[twv1.LabelRun]
	return c.Status().Patch(ctx, run, client.RawPatch(types.MergePatchType, []byte(body)))
}

// scaleTripProgress is the Progress condition a real sidecar's trip carries.
func scaleTripProgress() string {
	if !scaleProgress {
		return ""
	}
	return fmt.Sprintf(`,{"type":%q,"status":"True","reason":%q,"message":%q}`, protocol.ConditionProgress, protocol.ReasonRunning,
		protocol.Marshal(counts(scaleOwnSteps, scaleOwnCost)))
}
