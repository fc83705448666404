package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// BenchmarkSteady: N AgentRuns (default 1,000, TURNWATCH_STEADY_RUNS) all
// running at once on the envtest API server, each with a sidecar played by
// the benchmark: it reports progress as the real sidecar does (one merge
// patch of its run's status: steps, costUSD and progress, see
// sidecar/run_progress.go), once per progress period (statusFreshness less
// 5 s), with counts that always moved (the worst case: every agent
// progresses in every window). Phases:
//
//  1. ramp: create the runs; wait until every Pod exists and one progress
//     period has passed;
//  2. steady: for TURNWATCH_STEADY_WINDOW (default 2 x freshness) count
//     the API writes of the manager and the sidecars (counted at the
//     transport, as BenchmarkScale does) and the time from each progress
//     write to an informer seeing the run's status show it (fold-*);
//  3. trips: under the same load, trip TURNWATCH_STEADY_TRIPS runs (default
//     50, 2 a second) and time each from the sidecar's Tripped write to the
//     turn's Failed outcome (trip-*).
//
// The age of the steps and cost `kubectl get agentruns` shows is at most the
// progress period + the sidecar's 1 s tick + the fold time (s-age-max).
//
// With TURNWATCH_STEADY_BUDGETS=N the runs are spread over N namespaces,
// each with a TurnPolicy budget (never exhausted), and the ledger's own
// writes (the policies' status updates, the budget finalizers removed) are
// reported apart (ledger-writes/s).
//
//	make bench-steady
//	TURNWATCH_STEADY_FRESHNESS=100s make bench-steady
//	TURNWATCH_STEADY_BUDGETS=50 make bench-steady
func BenchmarkSteady(b *testing.B) {
	needEnv(b)
	o := steadyOpts{runs: 1000, freshness: time.Minute, trips: 50}
	if s := os.Getenv("TURNWATCH_STEADY_RUNS"); s != "" {
		o.runs, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("TURNWATCH_STEADY_FRESHNESS"); s != "" {
		o.freshness, _ = time.ParseDuration(s)
	}
	o.window = 2 * o.freshness
	if s := os.Getenv("TURNWATCH_STEADY_WINDOW"); s != "" {
		o.window, _ = time.ParseDuration(s)
	}
	if s := os.Getenv("TURNWATCH_STEADY_TRIPS"); s != "" {
		o.trips, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("TURNWATCH_STEADY_BUDGETS"); s != "" {
		o.budgets, _ = strconv.Atoi(s)
	}
	for range b.N {
		runSteady(b, o)
	}
}

type steadyOpts struct {
	runs, trips       int
	freshness, window time.Duration
	// budgets is how many namespaces, each with a TurnPolicy budget, the
	// runs are spread over; 0: one namespace, no policy.
	budgets int
}

// steadySidecars plays every turn's sidecar: a Progress write per period
// until the turn trips.
type steadySidecars struct {
	b      *testing.B
	nsOf   map[string]string // run -> its namespace
	client client.Client
	period time.Duration

	mu      sync.Mutex
	steps   map[string]int64     // run -> steps last written
	pending map[string]time.Time // run -> when its last write started, until the run shows it
	fold    []time.Duration      // write -> run status shows it
	stopped map[string]bool      // run -> tripped: no more progress
	tripAt  map[string]time.Time // turn -> Tripped write started
	tripLat []time.Duration      // Tripped write -> turn Failed
	pods    map[string]bool
	measure bool // record fold times (the steady phase only)
}

// benchCond is a Pod condition as the sidecar patches it (sidecar/report.go).
type benchCond struct {
	Type               string                 `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
	LastTransitionTime *metav1.Time           `json:"lastTransitionTime,omitempty"`
}

func (s *steadySidecars) patch(ctx context.Context, pod string, conds ...benchCond) error {
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	p := &corev1.Pod{}
	p.Namespace, p.Name = s.nsOf[strings.TrimSuffix(pod, "-0")], pod
	return s.client.Status().Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, body))
}

// follow is one sidecar: it starts at a random point of its period (real
// sidecars start at different times) and writes progress once a period.
func (s *steadySidecars) follow(ctx context.Context, run, pod string) {
	t := time.NewTimer(rand.N(s.period))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(s.period)
		s.mu.Lock()
		if s.stopped[run] {
			s.mu.Unlock()
			return
		}
		s.steps[run] += 1 + rand.Int64N(5)
		steps := s.steps[run]
		start := time.Now()
		if s.measure {
			s.pending[run] = start
		}
		s.mu.Unlock()
		if err := s.report(ctx, run, pod, steps); err != nil && ctx.Err() == nil {
			s.b.Errorf("progress %s: %v", pod, err)
		}
	}
}

// report is the sidecar's progress write: its run's totals (a first turn:
// its own counts, in the canonical decimal form the sidecar writes) and its
// own counts, in one merge patch of the run's status.
func (s *steadySidecars) report(ctx context.Context, run, pod string, steps int64) error {
	cost := shared.SumUSD(benchCost(steps))
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"steps": steps, "costUSD": cost,
		"progress": map[string]any{"turn": pod, "steps": steps, "costUSD": cost, "time": time.Now().UTC().Format(time.RFC3339)}}})
	r := &twv1.AgentRun{}
	r.Namespace, r.Name = s.nsOf[run], run
	return s.client.Status().Patch(ctx, r, client.RawPatch(types.MergePatchType, body))
}

// seen is the run informer's view: a run showing the steps last written
// ends that write's wait.
func (s *steadySidecars) seen(run *twv1.AgentRun) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.pending[run.Name]
	if ok && run.Status.Steps >= s.steps[run.Name] {
		s.fold = append(s.fold, now.Sub(at))
		delete(s.pending, run.Name)
	}
}

func (s *steadySidecars) trip(ctx context.Context, run string) {
	s.mu.Lock()
	s.stopped[run] = true
	steps := s.steps[run]
	turn := agentrun.TurnName(run, 0)
	s.tripAt[turn] = time.Now()
	s.mu.Unlock()
	lt := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	err := s.patch(ctx, turn,
		benchCond{Type: protocol.ConditionTripped, Status: corev1.ConditionTrue, Reason: "IdenticalCalls", Message: "repeated an identical tool call 4 times", LastTransitionTime: &lt},
		benchCond{Type: protocol.ConditionProgress, Status: corev1.ConditionTrue, Reason: protocol.ReasonRunning, Message: protocol.Marshal(counts(steps+1, benchCost(steps+1)))})
	if err != nil {
		s.b.Errorf("trip %s: %v", turn, err)
	}
}

// benchCost is a cost that grows with the steps.
func benchCost(steps int64) string { return fmt.Sprintf("%d.%04d", steps/100, steps%100*37) }

func (s *steadySidecars) failed(turn *twv1.AgentTurn) {
	if turn.Status.Outcome != twv1.TurnFailed {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.tripAt[turn.Name]; ok {
		s.tripLat = append(s.tripLat, now.Sub(at))
		delete(s.tripAt, turn.Name)
	}
}

func runSteady(b *testing.B, o steadyOpts) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(b)
	helmRBAC(b, ns)
	spread := benchBudgets(b, ns, o.budgets)
	cfg := shared.DefaultConfig()
	cfg.StatusFreshness = shared.Duration{Duration: o.freshness}
	cfg.StartTimeout = shared.Duration{Duration: time.Hour} // no kubelet: Pods stay Pending
	cfg.Rerolls.Max = ptrTo[int32](0)                       // a trip faults the run: no new turn in the load
	var ctrlWrites, sidecarWrites writeCounter
	startManager(b, ns, managerOpts{config: cfg, rest: ctrlWrites.wrap(restConfig), namespaces: spread[1:]})
	sc, err := client.New(sidecarWrites.wrap(restConfig), client.Options{Scheme: testScheme})
	if err != nil {
		b.Fatal(err)
	}
	s := &steadySidecars{b: b, nsOf: map[string]string{}, client: sc, period: shared.ProgressPeriod(o.freshness),
		steps: map[string]int64{}, pending: map[string]time.Time{}, stopped: map[string]bool{},
		tripAt: map[string]time.Time{}, pods: map[string]bool{}}

	cached := map[string]cache.Config{}
	for _, n := range spread {
		cached[n] = cache.Config{}
	}
	informers, err := cache.New(restConfig, cache.Options{Scheme: testScheme, DefaultNamespaces: cached})
	if err != nil {
		b.Fatal(err)
	}
	podInf, _ := informers.GetInformer(ctx, &corev1.Pod{})
	_, _ = podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		pod := obj.(*corev1.Pod)
		s.mu.Lock()
		s.pods[pod.Name] = true
		s.mu.Unlock()
		go s.follow(ctx, pod.Labels[twv1.LabelRun], pod.Name)
	}})
	runInf, _ := informers.GetInformer(ctx, &twv1.AgentRun{})
	_, _ = runInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { s.seen(obj.(*twv1.AgentRun)) }})
	turnInf, _ := informers.GetInformer(ctx, &twv1.AgentTurn{})
	_, _ = turnInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { s.failed(obj.(*twv1.AgentTurn)) }})
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)

	b.ResetTimer()
	start := time.Now()
	names := make([]string, o.runs)
	for i := range o.runs { // before any Pod, so that the sidecars only read nsOf
		names[i] = fmt.Sprintf("f%04d", i)
		s.nsOf[names[i]] = spread[i%len(spread)]
	}
	for i := range o.runs {
		create(b, newRun(s.nsOf[names[i]], names[i]))
	}
	for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		s.mu.Lock()
		n := len(s.pods)
		s.mu.Unlock()
		if n == o.runs {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pods", n, o.runs)
		}
	}
	ramp := time.Since(start)
	time.Sleep(s.period + 2*time.Second) // every sidecar in its period

	// Steady state.
	s.mu.Lock()
	s.measure = true
	s.mu.Unlock()
	c0, _ := ctrlWrites.snapshot()
	s0, _ := sidecarWrites.snapshot()
	_, by0 := ctrlWrites.snapshot()
	time.Sleep(o.window)
	c1, by1 := ctrlWrites.snapshot()
	s1, _ := sidecarWrites.snapshot()
	s.mu.Lock()
	s.measure = false
	fold := slices.Clone(s.fold)
	s.mu.Unlock()

	// Trips under the same load.
	for i := range o.trips {
		s.trip(ctx, names[i*len(names)/max(1, o.trips)])
		time.Sleep(500 * time.Millisecond)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s.mu.Lock()
		done := len(s.tripLat)
		s.mu.Unlock()
		if done == o.trips || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()

	secs := o.window.Seconds()
	cw, sw := c1-c0, s1-s0
	s.mu.Lock()
	trips := slices.Clone(s.tripLat)
	s.mu.Unlock()
	if len(trips) < o.trips {
		b.Errorf("%d of %d trips reached Failed", len(trips), o.trips)
	}
	b.ReportMetric(float64(cw+sw)/secs, "writes/s")
	b.ReportMetric(float64(cw)/secs, "ctrl-writes/s")
	if o.budgets > 0 {
		b.ReportMetric(float64(ledgerWrites(by1)-ledgerWrites(by0))/secs, "ledger-writes/s")
	}
	b.ReportMetric(float64(sw)/secs, "sidecar-writes/s")
	b.ReportMetric(ms(percentile(fold, 50)), "ms-fold-p50")
	b.ReportMetric(ms(percentile(fold, 99)), "ms-fold-p99")
	b.ReportMetric((s.period + time.Second + slices.Max(append(fold, 0))).Seconds(), "s-age-max")
	b.ReportMetric(ms(percentile(trips, 50)), "ms-trip-p50")
	b.ReportMetric(ms(percentile(trips, 99)), "ms-trip-p99")
	keys := make([]string, 0, len(by1))
	for k := range by1 {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.Logf("controller writes in the window %-28s %6d  (%.2f/s)", k, by1[k]-by0[k], float64(by1[k]-by0[k])/secs)
	}
	b.Logf("%d runs running (ramp %s), freshness %s, progress period %s, window %s: %d sidecar + %d controller writes; %d folds timed; %d trips",
		o.runs, ramp.Round(time.Second), o.freshness, s.period, o.window, sw, cw, len(fold), len(trips))
}

// benchBudgets makes the namespaces the runs are spread over: ns alone
// without budgets, else n namespaces (ns the first) each with a TurnPolicy
// budget that the load never exhausts.
func benchBudgets(b *testing.B, ns string, n int) []string {
	if n <= 0 {
		return []string{ns}
	}
	out := []string{ns}
	for len(out) < n {
		extra := newNamespace(b)
		helmRBAC(b, extra)
		out = append(out, extra)
	}
	for _, each := range out {
		create(b, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: each, Name: "budget"},
			Spec: twv1.TurnPolicySpec{Budget: &twv1.Budget{MaxCostUSD: "1000000", Window: "24h"}}})
	}
	return out
}

// ledgerWrites are the ledger's own writes among the controller's: the
// policies' status updates and the budget finalizers removed from turns.
func ledgerWrites(by map[string]int) int {
	n := 0
	for k, v := range by {
		if strings.Contains(k, "turnpolicies") || k == "PATCH agentturns" {
			n += v
		}
	}
	return n
}
