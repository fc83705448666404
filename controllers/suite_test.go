package controllers

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/internal/fixture"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The envtest suite: a real kube-apiserver and etcd (hack/envtest.sh builds
// them; `make test-envtest` points KUBEBUILDER_ASSETS at them), the real
// reconcilers in a real manager, and the test playing the sidecar and the
// kubelet by writing Pod status. There is no kubelet: a stopped agent shows
// as spec.activeDeadlineSeconds = 1 on its Pod.

var (
	testEnv    *envtest.Environment
	restConfig *rest.Config
	k8s        client.Client // straight to the API server, no cache
	testScheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if err := twv1.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if !testenv.Available() {
		fmt.Println(testenv.SkipNotice())
		os.Exit(m.Run())
	}
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("TURNWATCH_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	var err error
	testEnv, restConfig, err = testenv.Start(filepath.Join("config", "crd", "bases"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s, err = client.New(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// needEnv skips a test that needs the API server when there is none.
func needEnv(t testing.TB) {
	t.Helper()
	if restConfig == nil {
		t.Skip("no envtest API server (KUBEBUILDER_ASSETS unset)")
	}
}

// testManager is one manager process, confined to one namespace so that
// tests run side by side.
type testManager struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

type managerOpts struct {
	config    shared.Config
	clock     clock.PassiveClock
	newClient client.NewClientFunc
	rest      *rest.Config
	// logTail serves the agents' log tails (envtest has no kubelet); nil:
	// every log is empty.
	logTail agentturn.LogTail
	// namespaces are more namespaces the manager caches besides its own.
	namespaces []string
}

func startManager(t testing.TB, ns string, o managerOpts) *testManager {
	t.Helper()
	if o.config.Guards.StepBudget == nil {
		o.config = shared.DefaultConfig()
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	cfg := restConfig
	if o.rest != nil {
		cfg = o.rest
	}
	cached := map[string]cache.Config{ns: {}}
	for _, n := range o.namespaces {
		cached[n] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
		Cache:                  cache.Options{DefaultNamespaces: cached, ByObject: CacheByObject()},
		NewClient:              o.newClient,
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.logTail == nil {
		o.logTail = func(context.Context, string, string, string, int64) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("")), nil
		}
	}
	if err := Setup(mgr, Options{Config: o.config, SidecarImage: "turnwatch-sidecar:test", Concurrency: 4, Clock: o.clock, LogTail: o.logTail, Namespaces: cached}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &testManager{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *testManager) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
	})
}

func ptrTo[T any](v T) *T { return &v }

// newNamespace makes a namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tw-" + rand.String(8)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// The fixtures the tests of every package build from.
var (
	newRun      = fixture.Run
	containsAll = fixture.ContainsAll
	envOf       = fixture.EnvOf
	t0          = fixture.T0
	usd         = fixture.USD
)

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it returns nil, failing the test after 30 s
// with cond's last error.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	var last error
	err := testenv.WaitFor(context.Background(), 30*time.Second, 25*time.Millisecond, what, nil,
		func() (bool, error) {
			last = cond()
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

// consistently checks cond for a while and fails at its first error.
func consistently(t testing.TB, what string, d time.Duration, cond func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func getTurn(ns, name string) (*twv1.AgentTurn, error) {
	t := &twv1.AgentTurn{}
	return t, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, t)
}

func getRun(ns, name string) (*twv1.AgentRun, error) {
	r := &twv1.AgentRun{}
	return r, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, r)
}

func getPod(ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, p)
}

// runningRun creates run (first turn's Pod name: name-0) and waits until
// its Pod exists and the run is Running, so a test can play that turn's
// sidecar; it returns the Pod.
func runningRun(t testing.TB, run *twv1.AgentRun) *corev1.Pod {
	t.Helper()
	create(t, run)
	pod := waitPod(t, run.Namespace, run.Name+"-0")
	runPhase(t, run.Namespace, run.Name, twv1.RunRunning)
	return pod
}

// waitPod waits for a turn's Pod.
func waitPod(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "pod "+name, func() (err error) {
		pod, err = getPod(ns, name)
		return err
	})
	return pod
}

// playSidecar writes on a Pod's status what the sidecar (conditions) and the
// kubelet (phase, container states) would, through the status subresource.
func playSidecar(t testing.TB, ns, name string, edit func(*corev1.PodStatus)) {
	t.Helper()
	eventually(t, "write pod status of "+name, func() error {
		pod, err := getPod(ns, name)
		if err != nil {
			return err
		}
		edit(&pod.Status)
		return k8s.Status().Update(context.Background(), pod)
	})
}

// condition sets (or replaces) a Pod condition.
func condition(typ, reason, message string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		c := corev1.PodCondition{Type: corev1.PodConditionType(typ), Status: corev1.ConditionTrue,
			Reason: reason, Message: message, LastTransitionTime: metav1.Now()}
		for i := range s.Conditions {
			if string(s.Conditions[i].Type) == typ {
				s.Conditions[i] = c
				return
			}
		}
		s.Conditions = append(s.Conditions, c)
	}
}

// trip is the sidecar's Tripped condition for a detector.
func trip(detector, message string) func(*corev1.PodStatus) {
	return condition(protocol.ConditionTripped, protocol.ReasonFor(detector), message)
}

// finishedCond is the sidecar's Finished condition with a summary.
func finishedCond(s protocol.Summary) func(*corev1.PodStatus) {
	reason := protocol.ReasonNoResult
	if s.Result {
		reason = protocol.ReasonResult
	}
	return condition(protocol.ConditionFinished, reason, protocol.Marshal(s))
}

// agentExited is the kubelet reporting the agent container's exit.
func agentExited(code int32, reason string, podPhase corev1.PodPhase) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Phase = podPhase
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "agent", Image: "agent:test",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, FinishedAt: metav1.Now(),
			}},
		}}
	}
}

// turnSettled waits for a turn's outcome.
func turnSettled(t testing.TB, ns, name string) *twv1.AgentTurn {
	t.Helper()
	var turn *twv1.AgentTurn
	eventually(t, "turn "+name+" settles", func() (err error) {
		turn, err = getTurn(ns, name)
		if err == nil && turn.Status.Outcome == "" {
			err = fmt.Errorf("no outcome yet: %+v", turn.Status)
		}
		return err
	})
	return turn
}

// runPhase waits for a run's phase.
func runPhase(t testing.TB, ns, name string, phase twv1.RunPhase) *twv1.AgentRun {
	t.Helper()
	var run *twv1.AgentRun
	eventually(t, fmt.Sprintf("run %s is %s", name, phase), func() (err error) {
		run, err = getRun(ns, name)
		if err == nil && run.Status.Phase != phase {
			err = fmt.Errorf("phase %q, status %+v", run.Status.Phase, run.Status)
		}
		return err
	})
	return run
}

// podStopped waits for the controller to stop a Pod's agent.
func podStopped(t testing.TB, ns, name string) {
	t.Helper()
	eventually(t, "pod "+name+" stopped", func() error {
		pod, err := getPod(ns, name)
		if err != nil {
			return err
		}
		if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 1 {
			return fmt.Errorf("activeDeadlineSeconds = %v", d)
		}
		return nil
	})
}

// turnNames lists a run's turns by name.
func turnNames(ns, run string) ([]string, error) {
	var list twv1.AgentTurnList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{twv1.LabelRun: run}); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range list.Items {
		names = append(names, t.Name)
	}
	return names, nil
}

// runEvents are the Events about a run with a reason, as kubectl describe
// shows them.
func runEvents(ns, run, reason string) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == run && e.Regarding.Kind == "AgentRun" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitEvents waits for exactly n Events of a reason about a run, and returns them.
func waitEvents(t testing.TB, ns, run, reason string, n int) []eventsv1.Event {
	t.Helper()
	var evs []eventsv1.Event
	eventually(t, fmt.Sprintf("%d %s event(s) on %s", n, reason, run), func() (err error) {
		evs, err = runEvents(ns, run, reason)
		if err == nil && len(evs) != n {
			err = fmt.Errorf("%d events", len(evs))
		}
		return err
	})
	return evs
}
