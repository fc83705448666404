package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/attach"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Attached Pods (docs/attach.md) on the real API server: the admission
// policy turnwatch-attach injects the sidecar from the ConfigMap the
// manager keeps in a consenting namespace; the test plays the Job
// controller (the Job's Pods), the sidecar (its conditions) and the
// kubelet; the manager records and stops.

const loopMessage = "repeated an identical tool call 4 times"

// consentingNamespace makes a namespace whose owner consented to attach,
// with the admission policies installed.
func consentingNamespace(t testing.TB) string {
	t.Helper()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tw-" + rand.String(8),
		Labels: map[string]string{twv1.LabelAttach: twv1.AttachEnabled}}}
	create(t, ns)
	return ns.Name
}

// attachReady waits for what the manager keeps in a consenting namespace
// before the admission policy injects its Pods: the policy's parameters
// and the attached sidecars' account.
func attachReady(t testing.TB, ns string) {
	t.Helper()
	eventually(t, "the attach parameters of "+ns, func() error {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: twv1.AttachParams}, &corev1.ConfigMap{}); err != nil {
			return err
		}
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: render.AttachServiceAccount}, &corev1.ServiceAccount{})
	})
}

// agentJob is a batch/v1 Job whose pod template asks to be watched; no
// Job controller runs in envtest: the test makes its Pods.
func agentJob(t testing.TB, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptrTo(int32(1)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{twv1.LabelWatch: "claude"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "agent", Image: "agent:test"}}},
			},
		},
	}
	create(t, job)
	return job
}

// jobPod is a Pod of job as the Job controller makes it: labelled,
// controlled by the Job, holding no token unless mutate mounts one.
func jobPod(t testing.TB, job *batchv1.Job, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: name, Labels: map[string]string{twv1.LabelWatch: "claude"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptrTo(false),
			Containers:                   []corev1.Container{{Name: "agent", Image: "agent:test"}},
		},
	}
	if err := controllerutil.SetControllerReference(job, pod, testScheme); err != nil {
		t.Fatal(err)
	}
	for _, f := range mutate {
		f(pod)
	}
	return pod
}

// attachedPod creates a Pod of job as it is (the sidecar by hand, where
// the test wants one).
func attachedPod(t testing.TB, job *batchv1.Job, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	pod := jobPod(t, job, name, mutate...)
	create(t, pod)
	return pod
}

// injectedPod creates a Pod of job in a consenting namespace and waits
// for the admission policy to inject it: a policy just installed, or
// parameters just written, take a moment to be in force in the API
// server; a Pod created before is deleted and made again.
func injectedPod(t testing.TB, job *batchv1.Job, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "pod "+name+" injected", func() error {
		pod = jobPod(t, job, name, mutate...)
		if err := k8s.Create(context.Background(), pod); err != nil {
			return err
		}
		if len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Name != protocol.SidecarContainerName {
			_ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
			return fmt.Errorf("created without the sidecar")
		}
		return nil
	})
	return pod
}

// withSidecar adds the sidecar by hand, as a Pod copied from an injected
// one would carry it.
func withSidecar(p *corev1.Pod) {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: protocol.SidecarContainerName, Image: "turnwatch-sidecar:test", RestartPolicy: &always})
}

// attachedTurn waits for the turn of an attached Pod.
func attachedTurn(t testing.TB, ns, name string, cond func(*twv1.AgentTurn) error) *twv1.AgentTurn {
	t.Helper()
	var turn *twv1.AgentTurn
	eventually(t, "turn of pod "+name, func() (err error) {
		if turn, err = getTurn(ns, name); err == nil && cond != nil {
			err = cond(turn)
		}
		return err
	})
	return turn
}

// eventsAbout are the Events about an object of a kind with a reason.
func eventsAbout(ns, kind, name, reason string) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitEventAbout waits for one Event about an object and returns it.
func waitEventAbout(t testing.TB, ns, kind, name, reason string) eventsv1.Event {
	t.Helper()
	var evs []eventsv1.Event
	eventually(t, fmt.Sprintf("a %s event on %s %s", reason, kind, name), func() (err error) {
		evs, err = eventsAbout(ns, kind, name, reason)
		if err == nil && len(evs) != 1 {
			err = fmt.Errorf("%d events", len(evs))
		}
		return err
	})
	return evs[0]
}

// A Job's Pod is recorded, tripped, stopped the Kubernetes way with an
// Event on the Job, and the Job's next Pod is the next attempt.
func TestAttachJobTripped(t *testing.T) {
	needEnv(t)
	ns := consentingNamespace(t)
	startManager(t, ns, managerOpts{})
	attachReady(t, ns)
	job := agentJob(t, ns, "fix-bug")
	injectedPod(t, job, "fix-bug-a")
	turn := attachedTurn(t, ns, "fix-bug-a", func(tu *twv1.AgentTurn) error {
		if tu.Status.PodName == "" || tu.Status.StartTime == nil {
			return fmt.Errorf("status %+v: no pod recorded yet", tu.Status)
		}
		return nil
	})
	pod, _ := getPod(ns, "fix-bug-a")
	want := twv1.AttachedPod{Name: "fix-bug-a", UID: string(pod.UID), Format: twv1.FormatClaude, AgentContainer: "agent", Owner: "Job/fix-bug"}
	if turn.Spec.PodRef == nil || *turn.Spec.PodRef != want || turn.Spec.RunName != "" || turn.Spec.Attempt != 0 {
		t.Fatalf("spec podRef %+v run %q attempt %d, want %+v, no run, attempt 0", turn.Spec.PodRef, turn.Spec.RunName, turn.Spec.Attempt, want)
	}
	if !metav1.IsControlledBy(turn, pod) || turn.Labels[attach.LabelPod] != pod.Name || turn.Labels[attach.LabelOwnerUID] != string(job.UID) {
		t.Errorf("owners %+v labels %v: want the Pod's, and its name and the Job's UID", turn.OwnerReferences, turn.Labels)
	}
	if len(turn.Spec.Guards) == 0 {
		t.Error("no guards resolved")
	}
	if c := meta.FindStatusCondition(turn.Status.Conditions, twv1.TurnConditionForgeable); c != nil {
		t.Errorf("Forgeable %+v: only the injected sidecar mounts a token", c)
	}

	playSidecar(t, ns, "fix-bug-a", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":4,"costUSD":"0.02463"}`))
	playSidecar(t, ns, "fix-bug-a", trip(monitor.DetectorIdenticalCalls, loopMessage))
	podStopped(t, ns, "fix-bug-a")
	settled := turnSettled(t, ns, "fix-bug-a")
	if e := settled.Status.Error; settled.Status.Outcome != twv1.TurnFailed || e == nil || e.Type != twv1.ClassRunaway || e.Detector != monitor.DetectorIdenticalCalls {
		t.Errorf("outcome %s error %+v, want Failed runaway by %s", settled.Status.Outcome, e, monitor.DetectorIdenticalCalls)
	}
	if settled.Status.Steps != 4 || settled.Status.CostUSD != "0.02463" {
		t.Errorf("counts %d %s, want the sidecar's 4 0.02463", settled.Status.Steps, settled.Status.CostUSD)
	}
	if stopped, _ := getPod(ns, "fix-bug-a"); !hasCondition(stopped, protocol.ConditionTripped) {
		t.Error("the Pod lost the sidecar's Tripped condition: a podFailurePolicy could not match it")
	}
	onJob := waitEventAbout(t, ns, "Job", "fix-bug", attach.EventTripped)
	if onJob.Type != corev1.EventTypeWarning || containsAll(onJob.Note, "fix-bug-a", monitor.DetectorIdenticalCalls, loopMessage) != nil {
		t.Errorf("the Job's event: %s %q", onJob.Type, onJob.Note)
	}
	waitEventAbout(t, ns, "AgentTurn", "fix-bug-a", attach.EventTripped)

	injectedPod(t, job, "fix-bug-b")
	if again := attachedTurn(t, ns, "fix-bug-b", nil); again.Spec.Attempt != 1 {
		t.Errorf("the Job's second Pod is attempt %d, want 1", again.Spec.Attempt)
	}
}

func hasCondition(pod *corev1.Pod, typ string) bool {
	for _, c := range pod.Status.Conditions {
		if string(c.Type) == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// An agent that holds a token could forge its verdict: its turn says so. A
// guards annotation that cannot be read is told on the turn. A labelled Pod
// in a namespace that did not consent gets no turn.
func TestAttachForgeableAndConsent(t *testing.T) {
	needEnv(t)
	ns := consentingNamespace(t)
	other := newNamespace(t)
	startManager(t, ns, managerOpts{namespaces: []string{other}})
	attachReady(t, ns)
	job := agentJob(t, ns, "tokened")
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}})
	token := corev1.Volume{Name: "kube-api-access-x1", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	injectedPod(t, job, "tokened-a", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "agent"
		p.Spec.Volumes = []corev1.Volume{token}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: token.Name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
		p.Annotations = map[string]string{twv1.AnnotationGuards: `{"maxSteps": 64}`}
	})
	turn := attachedTurn(t, ns, "tokened-a", func(tu *twv1.AgentTurn) error {
		if meta.FindStatusCondition(tu.Status.Conditions, twv1.TurnConditionForgeable) == nil {
			return fmt.Errorf("conditions %+v", tu.Status.Conditions)
		}
		return nil
	})
	c := meta.FindStatusCondition(turn.Status.Conditions, twv1.TurnConditionForgeable)
	if c.Status != metav1.ConditionTrue || containsAll(c.Message, "agent", "kube-api-access-x1") != nil {
		t.Errorf("Forgeable %+v: want True naming the container and the volume", c)
	}
	ev := waitEventAbout(t, ns, "AgentTurn", "tokened-a", attach.EventGuardsInvalid)
	if err := containsAll(ev.Note, twv1.AnnotationGuards, "maxSteps"); err != nil {
		t.Error(err)
	}

	outside := agentJob(t, other, "outside")
	attachedPod(t, outside, "outside-a", withSidecar)
	consistently(t, "no turn without the namespace's consent", 2*time.Second, func() error {
		if _, err := getTurn(other, "outside-a"); err == nil {
			return fmt.Errorf("a turn was recorded")
		}
		return nil
	})
}

// A running attached Pod is stopped as overspend when a budget of its
// namespace is spent, reporting or not; one that starts while it is spent
// (admission does not wait on the manager) is stopped at its first report.
func TestAttachBudgetSpent(t *testing.T) {
	needEnv(t)
	ns := consentingNamespace(t)
	startManager(t, ns, managerOpts{})
	attachReady(t, ns)
	budgetPolicy(t, ns, "1", "24h")
	eventually(t, "the window opens", func() error {
		p, err := getPolicy(ns, "team")
		if err == nil && p.Status.Budget == nil {
			err = fmt.Errorf("no ledger")
		}
		return err
	})
	job := agentJob(t, ns, "spender")
	injectedPod(t, job, "spender-a")
	running := attachedTurn(t, ns, "spender-a", func(tu *twv1.AgentTurn) error {
		if tu.Status.PodName == "" {
			return fmt.Errorf("not followed yet")
		}
		return nil
	})
	if !controllerutil.ContainsFinalizer(running, twv1.BudgetFinalizer) {
		t.Errorf("finalizers %v: the ledger must count the attached turn", running.Finalizers)
	}
	// Settled after the window opened (a status time has whole seconds).
	budgetTurn(t, ns, "spent", "2.00", twv1.TurnFailed, time.Now().Add(time.Second), nil)
	podStopped(t, ns, "spender-a") // no report: the policy's exhaustion woke it

	injectedPod(t, job, "spender-b")
	playSidecar(t, ns, "spender-b", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":1,"costUSD":"0.01"}`))
	podStopped(t, ns, "spender-b")
	for _, name := range []string{"spender-a", "spender-b"} {
		settled := turnSettled(t, ns, name)
		if e := settled.Status.Error; e == nil || e.Type != twv1.ClassOverspend || e.Detector != twv1.DetectorBudget || !strings.Contains(e.Message, "TurnPolicy/team") {
			t.Errorf("%s: error %+v, want overspend by budget naming TurnPolicy/team", name, e)
		}
	}
	eventually(t, "a Tripped event on the Job per Pod, naming the budget", func() error {
		evs, err := eventsAbout(ns, "Job", "spender", attach.EventTripped)
		if err == nil && len(evs) != 2 {
			return fmt.Errorf("%d events", len(evs))
		}
		for _, e := range evs {
			if err := containsAll(e.Note, "spender-", twv1.DetectorBudget); err != nil {
				return err
			}
		}
		return err
	})
	eventually(t, "the ledger counts both attached turns", func() error {
		p, err := getPolicy(ns, "team")
		if err != nil {
			return err
		}
		// spender-b's report may come after its stop: 2.00 or 2.01.
		if b := p.Status.Budget; b == nil || b.Turns != 3 || len(b.Counting) != 0 {
			return fmt.Errorf("ledger %+v, want 3 turns counted, none listed", b)
		}
		return nil
	})
}

// perNamespace are the manager's writes once per namespace, not per turn:
// the sidecar's account and RoleBinding (a run's), the attached sidecars'
// and the admission policy's parameters (an attach namespace's).
var perNamespace = []string{"POST serviceaccounts", "POST rolebindings", "POST configmaps"}

// The manager's API writes per attached Pod, tripped and stopped, against
// per turn of a run tripped, rerolled, tripped and faulted (issue 35: no
// more). The sidecar's writes are played by the test and not counted: they
// are the same on both sides (its conditions on its Pod), but for the
// run's progress report, which an attached Pod has not.
func TestWritesPerAttachedPod(t *testing.T) {
	needEnv(t)
	var runWrites, podWrites writeCounter
	runNs := newNamespace(t)
	startManager(t, runNs, managerOpts{rest: runWrites.wrap(restConfig)})
	create(t, newRun(runNs, "w"))
	for _, name := range []string{"w-0", "w-1"} {
		waitPod(t, runNs, name)
		playSidecar(t, runNs, name, trip(monitor.DetectorIdenticalCalls, loopMessage))
		turnSettled(t, runNs, name)
	}
	runPhase(t, runNs, "w", twv1.RunFaulted)
	waitEvents(t, runNs, "w", agentrun.EventFaulted, 1)

	ns := consentingNamespace(t)
	startManager(t, ns, managerOpts{rest: podWrites.wrap(restConfig)})
	attachReady(t, ns)
	job := agentJob(t, ns, "w")
	pods := []string{"w-a", "w-b"}
	for _, name := range pods {
		injectedPod(t, job, name)
		attachedTurn(t, ns, name, func(tu *twv1.AgentTurn) error {
			if tu.Status.PodName == "" {
				return fmt.Errorf("not followed yet")
			}
			return nil
		})
		playSidecar(t, ns, name, trip(monitor.DetectorIdenticalCalls, loopMessage))
		turnSettled(t, ns, name)
		podStopped(t, ns, name)
	}
	eventually(t, "two Tripped events on the Job", func() error {
		evs, err := eventsAbout(ns, "Job", "w", attach.EventTripped)
		if err == nil && len(evs) != 2 {
			err = fmt.Errorf("%d events", len(evs))
		}
		return err
	})
	time.Sleep(time.Second) // a late write would show

	perTurn := func(w *writeCounter, n int) float64 {
		c, by := w.snapshot()
		c -= by[reviewKey] + othersPolicies(by)
		for _, k := range perNamespace {
			c -= by[k]
		}
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("  %-40s %d", k, by[k])
		}
		return float64(c) / float64(n)
	}
	t.Log("a run's turns:")
	run := perTurn(&runWrites, 2)
	t.Log("attached Pods:")
	pod := perTurn(&podWrites, len(pods))
	t.Logf("manager writes per turn of a run: %.2f; per attached Pod: %.2f", run, pod)
	if pod > run {
		t.Errorf("%.2f manager writes per attached Pod, more than %.2f per turn of a run", pod, run)
	}
}

// A Pod created while the manager is down still gets its sidecar (the API
// server injects it; nothing of turnwatch is in the path) and is recorded
// once the manager is back, from its first list of the watched Pods.
func TestAttachManagerDown(t *testing.T) {
	needEnv(t)
	ns := consentingNamespace(t)
	down := startManager(t, ns, managerOpts{})
	attachReady(t, ns)
	down.stop()
	job := agentJob(t, ns, "while-down")
	injectedPod(t, job, "while-down-a")
	if _, err := getTurn(ns, "while-down-a"); err == nil {
		t.Fatal("a turn was recorded with no manager running")
	}
	startManager(t, ns, managerOpts{})
	turn := attachedTurn(t, ns, "while-down-a", func(tu *twv1.AgentTurn) error {
		if tu.Status.PodName == "" {
			return fmt.Errorf("status %+v: no pod recorded yet", tu.Status)
		}
		return nil
	})
	if turn.Spec.PodRef == nil || turn.Spec.PodRef.Owner != "Job/while-down" {
		t.Errorf("podRef %+v, want the Job's Pod", turn.Spec.PodRef)
	}
}
