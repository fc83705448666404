package agentturn

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The rendered Pod's grace covers the sidecar's drain and report; the
// sidecar carries the configured requests and limits.
func TestRenderPodGraceAndResources(t *testing.T) {
	cases := []struct {
		name     string
		template *int64
		want     *int64
	}{
		{"unset: the API's 30 s default is enough", nil, nil},
		{"too short: raised", ptr.To[int64](5), ptr.To(render.SidecarGraceSeconds)},
		{"zero: raised", ptr.To[int64](0), ptr.To(render.SidecarGraceSeconds)},
		{"just enough: kept", ptr.To(render.SidecarGraceSeconds), ptr.To(render.SidecarGraceSeconds)},
		{"longer: kept", ptr.To[int64](120), ptr.To[int64](120)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := newRun("ns", "r", func(r *twv1.AgentRun) { r.Spec.Template.Spec.TerminationGracePeriodSeconds = c.template })
			turn := &twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: "r-0", Namespace: "ns"}}
			res := shared.DefaultConfig().Sidecar.Resources
			pod, err := render.RenderPod(run, turn, render.RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards, Resources: res})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Spec.TerminationGracePeriodSeconds; !ptrEqual(got, c.want) {
				t.Errorf("grace %v, want %v", deref(got), deref(c.want))
			}
			if !ptrEqual(run.Spec.Template.Spec.TerminationGracePeriodSeconds, c.template) {
				t.Error("renderPod changed the run's template")
			}
			side := pod.Spec.InitContainers[0].Resources
			if side.Requests.Memory().Cmp(resource.MustParse("32Mi")) != 0 || side.Limits.Cpu().IsZero() || side.Limits.Memory().IsZero() {
				t.Errorf("sidecar resources %+v", side)
			}
			if !pod.Spec.Containers[0].Resources.Limits.Cpu().IsZero() {
				t.Error("the agent got the sidecar's resources")
			}
		})
	}
}

func ptrEqual(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseStartConfig(t *testing.T) {
	cfg, err := shared.ParseConfig([]byte(`
startTimeout: 2m
exitGrace: 15s
sidecar:
  resources:
    requests: {cpu: 20m, memory: 40Mi}
    limits: {memory: 80Mi}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StartTimeout.Duration != 2*time.Minute || cfg.ExitGrace.Duration != 15*time.Second {
		t.Errorf("durations %v %v", cfg.StartTimeout, cfg.ExitGrace)
	}
	r := cfg.Sidecar.Resources
	if r.Requests.Cpu().String() != "20m" || r.Limits.Memory().String() != "80Mi" || !r.Limits.Cpu().IsZero() {
		t.Errorf("resources replace the defaults as a whole: %+v", r)
	}
	def := shared.DefaultConfig()
	if def.StartTimeout.Duration != 10*time.Minute || def.ExitGrace.Duration != time.Minute || def.Sidecar.Resources.Limits.Memory().IsZero() {
		t.Errorf("defaults %+v", def)
	}
	for in, want := range map[string]string{
		"startTimeout: 0s": "startTimeout",
		"exitGrace: -1s":   "exitGrace",
		"sidecar: {resources: {requests: {memory: 1Gi}, limits: {memory: 1Mi}}}": "sidecar.resources",
		"sidecar: {resources: {requests: {memory: lots}}}":                       "quantities must match",
	} {
		if _, err := shared.ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", in, err, want)
		}
	}
}

func TestJudgeStart(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	timeout := 10 * time.Minute
	unschedulable := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}
	waiting := func(name, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	cases := []struct {
		name    string
		status  corev1.PodStatus
		after   time.Duration
		fail    string // a part of the message; empty: not failed
		recheck time.Duration
	}{
		{name: "pending, in time: woken at the deadline", status: corev1.PodStatus{Phase: corev1.PodPending}, after: time.Minute, recheck: 9 * time.Minute},
		{name: "unschedulable past the deadline", after: timeout,
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{unschedulable}},
			fail:   "did not start within 10m0s: not scheduled: Unschedulable: 0/1 nodes are available"},
		{name: "image not pulled past the deadline", after: 11 * time.Minute,
			status: corev1.PodStatus{Phase: corev1.PodPending,
				Conditions:            []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
				InitContainerStatuses: []corev1.ContainerStatus{{Name: protocol.SidecarContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
				ContainerStatuses:     []corev1.ContainerStatus{waiting("agent", "ErrImagePull", "pull access denied")}},
			fail: "container agent is waiting: ErrImagePull: pull access denied"},
		{name: "no status at all past the deadline", after: timeout, fail: "no node took it"},
		{name: "running", status: corev1.PodStatus{Phase: corev1.PodRunning}, after: time.Hour},
		{name: "the sidecar reported: started", after: time.Hour,
			status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: protocol.ConditionProgress, Status: corev1.ConditionTrue}}}},
		{name: "the agent ran", after: time.Hour,
			status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "agent",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: c.status}
			v := judgeStart(Verdict{}, pod, "agent", created, created.Add(c.after), timeout)
			if c.fail == "" {
				if v.Outcome != "" || v.recheck != c.recheck {
					t.Errorf("outcome %q recheck %v, want none and %v", v.Outcome, v.recheck, c.recheck)
				}
				return
			}
			if v.Outcome != twv1.TurnFailed || v.Err.Type != twv1.ClassInfra || !strings.Contains(v.Err.Message, c.fail) {
				t.Errorf("verdict %q %+v, want infra with %q", v.Outcome, v.Err, c.fail)
			}
		})
	}
	// A verdict already made is kept.
	done := Verdict{Outcome: twv1.TurnSucceeded}
	if v := judgeStart(done, &corev1.Pod{}, "agent", created, created.Add(time.Hour), timeout); v.Outcome != twv1.TurnSucceeded || v.Err != nil {
		t.Errorf("%+v", v)
	}
}

func TestJudgeHang(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace := time.Minute
	result := func(ago time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: protocol.ConditionResult, Status: corev1.ConditionTrue, Reason: protocol.ReasonResult,
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	summary := func(ago time.Duration, s protocol.Summary) corev1.PodCondition {
		c := result(ago)
		c.Message = protocol.Marshal(s)
		return c
	}
	running := []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	exited := []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
	cases := []struct {
		name    string
		status  corev1.PodStatus
		outcome twv1.TurnOutcome
		class   twv1.FaultClass
		recheck time.Duration
	}{
		{name: "a result that reports an error, exitGrace passed: agent-error", outcome: twv1.TurnFailed, class: twv1.ClassAgentError,
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running, Conditions: []corev1.PodCondition{
				summary(grace, protocol.Summary{Result: true, ResultError: "error_max_turns"})}}},
		{name: "a summarised result, exitGrace passed: succeeded", outcome: twv1.TurnSucceeded,
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running, Conditions: []corev1.PodCondition{
				summary(grace, protocol.Summary{Result: true, StopReason: "end"})}}},
		{name: "no result", status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running}},
		{name: "result, within exitGrace", recheck: 20 * time.Second,
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running, Conditions: []corev1.PodCondition{result(40 * time.Second)}}},
		{name: "result, exitGrace passed: succeeded", outcome: twv1.TurnSucceeded,
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running, Conditions: []corev1.PodCondition{result(grace)}}},
		{name: "the agent exited: the exit path judges", // settleGrace, then Finished or the exit
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: exited, Conditions: []corev1.PodCondition{result(time.Hour)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judgeHang(Verdict{}, &corev1.Pod{Status: c.status}, "agent", now, grace)
			if v.Outcome != c.outcome || v.recheck != c.recheck {
				t.Errorf("outcome %q recheck %v, want %q %v", v.Outcome, v.recheck, c.outcome, c.recheck)
			}
			if got := errorClass(v); got != c.class {
				t.Errorf("class %q, want %q", got, c.class)
			}
		})
	}
}

func TestHangDeadline(t *testing.T) {
	settled := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	turn := &twv1.AgentTurn{Status: twv1.AgentTurnStatus{Outcome: twv1.TurnSucceeded, CompletionTime: shared.PtrTime(metav1.NewTime(settled))}}
	running := []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	cond := func(typ string, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodConditionType(typ), Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
	}
	cases := []struct {
		name    string
		status  corev1.PodStatus
		running bool
		since   time.Time
	}{
		{name: "agent not running", status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{name: "pod over", status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: running}},
		{name: "from the settling", status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running}, running: true, since: settled},
		{name: "from the Finished condition", running: true, since: settled.Add(-time.Minute),
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running,
				Conditions: []corev1.PodCondition{cond(protocol.ConditionFinished, settled.Add(-time.Minute))}}},
		{name: "from the Result condition", running: true, since: settled.Add(-2 * time.Minute),
			status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running,
				Conditions: []corev1.PodCondition{cond(protocol.ConditionFinished, settled), cond(protocol.ConditionResult, settled.Add(-2*time.Minute))}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at, running := hangDeadline(turn, &corev1.Pod{Status: c.status}, "agent", time.Minute)
			if running != c.running || (running && !at.Equal(c.since.Add(time.Minute))) {
				t.Errorf("deadline %v %v, want %v %v", at, running, c.since.Add(time.Minute), c.running)
			}
		})
	}
}

func TestQuotaRetry(t *testing.T) {
	cases := []struct{ elapsed, left, want time.Duration }{
		{0, 10 * time.Minute, time.Second},
		{4 * time.Second, 10 * time.Minute, 4 * time.Second},
		{5 * time.Minute, 5 * time.Minute, quotaRetryMax},
		{9*time.Minute + 50*time.Second, 10 * time.Second, 10 * time.Second},
	}
	for _, c := range cases {
		if got := quotaRetry(c.elapsed, c.left); got != c.want {
			t.Errorf("quotaRetry(%v, %v) = %v, want %v", c.elapsed, c.left, got, c.want)
		}
	}
	gr := schema.GroupResource{Resource: "pods"}
	for err, want := range map[error]bool{
		apierrors.NewForbidden(gr, "p", errors.New("exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0")): true,
		apierrors.NewForbidden(gr, "p", errors.New("failed quota: q: must specify limits.cpu for: agent")):                 false,
		apierrors.NewForbidden(gr, "p", errors.New(`violates PodSecurity "restricted:latest"`)):                            false,
		errors.New("exceeded quota"): false,
	} {
		if got := quotaExceeded(err); got != want {
			t.Errorf("quotaExceeded(%v) = %v", err, got)
		}
	}
}

func errorClass(v Verdict) twv1.FaultClass {
	if v.Err == nil {
		return ""
	}
	return v.Err.Type
}
