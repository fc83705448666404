package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The envtest side of "a turn that cannot start says why" and of exitGrace.
// There is no scheduler, kubelet, quota controller or garbage collector: the
// test writes what they would.

func noReroll(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} }

// poke changes a Pod so that the controller looks again (in production the
// requeue does, after the wait in real time; the test stepped a fake clock).
func poke(t *testing.T, ns, name string) {
	t.Helper()
	pod, err := getPod(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"poke":"%d"}}}`, time.Now().UnixNano())))
	if err := k8s.Patch(context.Background(), pod, patch); err != nil {
		t.Fatal(err)
	}
}

func runFaultedWith(t *testing.T, ns, run string, class twv1.FaultClass, parts ...string) {
	t.Helper()
	r := runPhase(t, ns, run, twv1.RunFaulted)
	if r.Status.Fault == nil || r.Status.Fault.Class != class {
		t.Fatalf("fault %+v, want class %s", r.Status.Fault, class)
	}
	if err := containsAll(r.Status.Fault.Message, parts...); err != nil {
		t.Error(err)
	}
}

func notStopped(ns, name string) error {
	pod, err := getPod(ns, name)
	if err != nil {
		return err
	}
	if pod.Spec.ActiveDeadlineSeconds != nil {
		return fmt.Errorf("pod %s was stopped (activeDeadlineSeconds %d)", name, *pod.Spec.ActiveDeadlineSeconds)
	}
	return nil
}

// refusePods installs a ValidatingAdmissionPolicy that refuses Pods labelled
// refuse=yes in namespace ns, and waits until the API server enforces it.
func refusePods(t *testing.T, ns string) {
	t.Helper()
	name := "refuse-" + ns
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('refuse' in object.metadata.labels)`,
				Message:    "pods labelled refuse are not welcome here",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	create(t, policy)
	create(t, binding)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, binding)
		_ = k8s.Delete(ctx, policy)
	})
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, Labels: map[string]string{"refuse": "yes"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
	}
	eventually(t, "the policy is enforced", func() error {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return errors.New("a labelled pod is still admitted")
		}
		return nil
	})
}

// A Pod refused by admission fails the turn as infra at once, with the API
// server's message; the reroll is refused the same way.
func TestPodRefusedByAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	refusePods(t, ns)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "vap", noReroll, func(r *twv1.AgentRun) { r.Spec.Template.Labels = map[string]string{"refuse": "yes"} }))
	runFaultedWith(t, ns, "vap", twv1.ClassInfra, "the pod was refused", "forbidden", "pods labelled refuse are not welcome here")
}

// setQuota makes a ResourceQuota and writes its status as the quota
// controller would (the admission plugin needs it).
func setQuota(t *testing.T, ns, name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	create(t, q)
	used := corev1.ResourceList{}
	for k := range hard {
		used[k] = resource.MustParse("0")
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if err := k8s.Status().Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

// A Pod refused by a ResourceQuota is created once the quota allows it; a
// quota that never does fails the turn after startTimeout, with the API
// server's message.
func TestPodRefusedByQuota(t *testing.T) {
	needEnv(t)
	t.Parallel()

	t.Run("freed", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		q := setQuota(t, ns, "none", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
		startManager(t, ns, managerOpts{})
		create(t, newRun(ns, "wait", noReroll))
		consistently(t, "retried, not failed", 1500*time.Millisecond, func() error {
			if turn, err := getTurn(ns, "wait-0"); err == nil && (turn.Status.Outcome != "" || turn.Status.PodName != "") {
				return fmt.Errorf("turn %+v", turn.Status)
			}
			return nil
		})
		if err := k8s.Delete(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		waitPod(t, ns, "wait-0")
	})

	t.Run("never", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		setQuota(t, ns, "none", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
		clk := clocktesting.NewFakeClock(time.Now())
		startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk})
		create(t, newRun(ns, "full", noReroll))
		consistently(t, "retried until startTimeout", time.Second, func() error {
			if turn, err := getTurn(ns, "full-0"); err == nil && turn.Status.Outcome != "" {
				return fmt.Errorf("settled before startTimeout: %+v", turn.Status)
			}
			return nil
		})
		clk.Step(11 * time.Minute) // the next retry (at most 1 s away in real time) sees the deadline passed
		runFaultedWith(t, ns, "full", twv1.ClassInfra, "refused for 10m0s", "exceeded quota")
	})

	t.Run("the sidecar has limits", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		// A quota on limits: every container must declare them, the sidecar too.
		setQuota(t, ns, "limits", corev1.ResourceList{
			corev1.ResourceLimitsCPU: resource.MustParse("8"), corev1.ResourceLimitsMemory: resource.MustParse("8Gi"),
		})
		startManager(t, ns, managerOpts{})
		create(t, newRun(ns, "fits", noReroll, func(r *twv1.AgentRun) {
			r.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		}))
		pod := waitPod(t, ns, "fits-0")
		if pod.Spec.InitContainers[0].Resources.Limits.Cpu().IsZero() {
			t.Errorf("sidecar resources %+v", pod.Spec.InitContainers[0].Resources)
		}
	})
}

// A Pod that does not run within startTimeout fails the turn as infra with
// the scheduler's reason, and is stopped.
func TestPendingPastStartTimeout(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cfg := shared.DefaultConfig()
	cfg.StartTimeout.Duration = 3 * time.Minute
	startManager(t, ns, managerOpts{config: cfg, clock: clk})
	create(t, newRun(ns, "stuck", noReroll))
	waitPod(t, ns, "stuck-0")
	unschedulable := func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", LastTransitionTime: metav1.Now()}}
	}
	playSidecar(t, ns, "stuck-0", unschedulable)
	clk.Step(2 * time.Minute)
	poke(t, ns, "stuck-0")
	consistently(t, "waits for startTimeout", 700*time.Millisecond, func() error {
		if turn, _ := getTurn(ns, "stuck-0"); turn.Status.Outcome != "" {
			return fmt.Errorf("settled before startTimeout: %+v", turn.Status)
		}
		return nil
	})
	clk.Step(2 * time.Minute)
	poke(t, ns, "stuck-0")
	runFaultedWith(t, ns, "stuck", twv1.ClassInfra, "did not start within 3m0s", "Unschedulable", "didn't match Pod's node affinity")
	podStopped(t, ns, "stuck-0")
}

// turnReads counts the manager's reads of each AgentTurn (one per reconcile).
type turnReads struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *turnReads) of(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[name]
}

func (r *turnReads) client(cfg *rest.Config, o client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, o)
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*twv1.AgentTurn); ok {
				r.mu.Lock()
				r.n[key.Name]++
				r.mu.Unlock()
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}), nil
}

// A Pod of the turn's name that the turn does not own fails the turn as
// infra, naming it, without a requeue loop; it is never stopped, cancel
// included. A Pod left by an earlier turn of the name is waited for (its
// garbage collection wakes the turn) until startTimeout.
func TestForeignPod(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	reads := &turnReads{n: map[string]int{}}
	startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk, newClient: reads.client})
	foreign := func(name string, labels map[string]string, owner *metav1.OwnerReference) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
		}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		create(t, p)
	}

	t.Run("unlabelled, unseen by the cache", func(t *testing.T) {
		foreign("squat-0", nil, nil)
		create(t, newRun(ns, "squat", noReroll))
		runFaultedWith(t, ns, "squat", twv1.ClassInfra, "squat-0", "did not create")
		before, _ := getPod(ns, "squat-0")
		time.Sleep(300 * time.Millisecond) // the settling's own events
		n := reads.of("squat-0")
		time.Sleep(2500 * time.Millisecond)
		if d := reads.of("squat-0") - n; d > 1 {
			t.Errorf("%d reconciles of a settled turn in 2.5 s: a requeue loop", d)
		}
		after, _ := getPod(ns, "squat-0")
		if after.ResourceVersion != before.ResourceVersion || notStopped(ns, "squat-0") != nil {
			t.Errorf("the foreign pod was touched: %v", notStopped(ns, "squat-0"))
		}
	})

	t.Run("an earlier turn's, then cancel", func(t *testing.T) {
		ref := metav1.OwnerReference{APIVersion: twv1.GroupVersion.String(), Kind: "AgentTurn", Name: "old-0",
			UID: types.UID("00000000-0000-4000-8000-000000000000"), Controller: ptr.To(true)}
		foreign("old-0", map[string]string{twv1.LabelRun: "old"}, &ref)
		run := newRun(ns, "old", noReroll)
		create(t, run)
		eventually(t, "the turn exists", func() error { _, err := getTurn(ns, "old-0"); return err })
		consistently(t, "waits for the garbage collector", time.Second, func() error {
			if turn, _ := getTurn(ns, "old-0"); turn.Status.Outcome != "" {
				return fmt.Errorf("settled: %+v", turn.Status)
			}
			return notStopped(ns, "old-0")
		})
		if err := k8s.Patch(context.Background(), run, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))); err != nil {
			t.Fatal(err)
		}
		runPhase(t, ns, "old", twv1.RunAborted)
		consistently(t, "cancel does not stop a pod the turn does not own", time.Second, func() error { return notStopped(ns, "old-0") })
	})

	t.Run("an earlier turn's, never collected", func(t *testing.T) {
		ref := metav1.OwnerReference{APIVersion: twv1.GroupVersion.String(), Kind: "AgentTurn", Name: "stale-0",
			UID: types.UID("00000000-0000-4000-8000-000000000001"), Controller: ptr.To(true)}
		foreign("stale-0", map[string]string{twv1.LabelRun: "stale"}, &ref)
		create(t, newRun(ns, "stale", noReroll))
		eventually(t, "the turn exists", func() error { _, err := getTurn(ns, "stale-0"); return err })
		clk.Step(11 * time.Minute)
		poke(t, ns, "stale-0")
		runFaultedWith(t, ns, "stale", twv1.ClassInfra, "stale-0", "earlier turn", "still in the way")
		if err := notStopped(ns, "stale-0"); err != nil {
			t.Error(err)
		}
	})
}

// An agent that printed its final result and does not exit: the turn is
// Succeeded and its Pod stopped exitGrace after the result.
func TestResultThenHang(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, ns, managerOpts{config: shared.DefaultConfig(), clock: clk})
	agentRunning := func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "agent:test",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	}
	notYet := func(pod string) {
		consistently(t, pod+" not stopped before exitGrace", 700*time.Millisecond, func() error { return notStopped(ns, pod) })
	}

	// Finished with a result, the agent still running: Succeeded at once,
	// stopped after exitGrace.
	create(t, newRun(ns, "fin", func(r *twv1.AgentRun) { r.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5) }))
	pod := waitPod(t, ns, "fin-0")
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != render.SidecarGraceSeconds {
		t.Errorf("grace %v, want it raised to %d", g, render.SidecarGraceSeconds)
	}
	if evs := waitEvents(t, ns, "fin", agentturn.EventGraceRaised, 1); !strings.Contains(evs[0].Note, "from 5 to 25") {
		t.Errorf("event %q", evs[0].Note)
	}
	playSidecar(t, ns, "fin-0", agentRunning)
	playSidecar(t, ns, "fin-0", finishedCond(protocol.Summary{Progress: counts(3, "0.02"), StopReason: "end", Result: true}))
	if turn := turnSettled(t, ns, "fin-0"); turn.Status.Outcome != twv1.TurnSucceeded {
		t.Fatalf("turn %+v", turn.Status)
	}
	notYet("fin-0")

	// The sidecar's Result condition, no Finished (the output never ends):
	// not settled until exitGrace, then Succeeded and stopped.
	create(t, newRun(ns, "hang"))
	waitPod(t, ns, "hang-0")
	playSidecar(t, ns, "hang-0", agentRunning)
	playSidecar(t, ns, "hang-0", condition(protocol.ConditionResult, protocol.ReasonResult, "the agent printed its final result and has not exited"))
	consistently(t, "waits exitGrace", 700*time.Millisecond, func() error {
		if turn, _ := getTurn(ns, "hang-0"); turn.Status.Outcome != "" {
			return fmt.Errorf("settled before exitGrace: %+v", turn.Status)
		}
		return notStopped(ns, "hang-0")
	})

	clk.Step(2 * time.Minute) // the conditions carry real times, truncated to seconds
	poke(t, ns, "fin-0")
	poke(t, ns, "hang-0")
	podStopped(t, ns, "fin-0")
	podStopped(t, ns, "hang-0")
	if turn := turnSettled(t, ns, "hang-0"); turn.Status.Outcome != twv1.TurnSucceeded {
		t.Fatalf("turn %+v", turn.Status)
	}
	runPhase(t, ns, "hang", twv1.RunSucceeded)
	for _, run := range []string{"fin", "hang"} {
		evs := waitEvents(t, ns, run, agentturn.EventStoppedAfterResult, 1)
		if err := containsAll(evs[0].Note, run+"-0", "did not exit within 1m0s"); err != nil {
			t.Error(err)
		}
	}
}
