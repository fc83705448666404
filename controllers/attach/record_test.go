package attach

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// watchedPod is a Job's Pod labelled for claude, with the injected sidecar.
func watchedPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-abc", UID: "pod-uid",
			Labels: map[string]string{twv1.LabelWatch: "claude"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller", UID: "cm-uid"},
				{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "job-uid", Controller: &yes},
			}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: protocol.SidecarContainerName}},
			Containers:     []corev1.Container{{Name: "agent"}, {Name: "helper"}},
		},
	}
	for _, f := range mutate {
		f(pod)
	}
	return pod
}

func TestAttached(t *testing.T) {
	enabled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{twv1.LabelAttach: twv1.AttachEnabled}}}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		ns   *corev1.Namespace
		want bool
	}{
		{"watched, consented, injected", watchedPod(), enabled, true},
		{"a namespace without the label", watchedPod(), &corev1.Namespace{}, false},
		{"a namespace labelled otherwise", watchedPod(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{twv1.LabelAttach: "disabled"}}}, false},
		{"a Pod without the label", watchedPod(func(p *corev1.Pod) { p.Labels = nil }), enabled, false},
		{"no sidecar injected", watchedPod(func(p *corev1.Pod) { p.Spec.InitContainers = nil }), enabled, false},
	} {
		if got := Attached(tt.pod, tt.ns); got != tt.want {
			t.Errorf("%s: Attached = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTurnFor(t *testing.T) {
	for _, tt := range []struct {
		name           string
		pod            *corev1.Pod
		agent, owner   string
		ownerUID       string
		attempt        int32
		wantOwnerLabel bool
	}{
		{"a Job's Pod", watchedPod(), "agent", "Job/job", "job-uid", 1, true},
		{"the agent container named", watchedPod(func(p *corev1.Pod) { p.Labels[twv1.LabelAgentContainer] = "helper" }), "helper", "Job/job", "job-uid", 0, true},
		{"a Pod no one controls", watchedPod(func(p *corev1.Pod) { p.OwnerReferences = p.OwnerReferences[:1] }), "agent", "", "", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			turn := TurnFor(tt.pod, tt.attempt)
			want := twv1.AttachedPod{Name: "job-abc", UID: "pod-uid", Format: twv1.FormatClaude, AgentContainer: tt.agent, Owner: tt.owner}
			if turn.Spec.PodRef == nil || *turn.Spec.PodRef != want {
				t.Errorf("podRef = %+v, want %+v", turn.Spec.PodRef, want)
			}
			if turn.Name != "job-abc" || turn.Namespace != "ns" || turn.Spec.Attempt != tt.attempt || turn.Spec.RunName != "" {
				t.Errorf("turn %s/%s attempt %d run %q", turn.Namespace, turn.Name, turn.Spec.Attempt, turn.Spec.RunName)
			}
			if ctl := metav1.GetControllerOf(turn); ctl == nil || ctl.Kind != "Pod" || ctl.UID != types.UID("pod-uid") {
				t.Errorf("controller %+v, want the Pod: the turn goes with it", ctl)
			}
			if turn.Labels[LabelPod] != "job-abc" {
				t.Errorf("labels %v: no %s", turn.Labels, LabelPod)
			}
			if got, ok := turn.Labels[LabelOwnerUID]; ok != tt.wantOwnerLabel || got != tt.ownerUID {
				t.Errorf("labels %v: %s = %q, want %q", turn.Labels, LabelOwnerUID, got, tt.ownerUID)
			}
		})
	}
}

func TestPodGuards(t *testing.T) {
	with := func(v string) *corev1.Pod {
		return watchedPod(func(p *corev1.Pod) { p.Annotations = map[string]string{twv1.AnnotationGuards: v} })
	}
	for _, tt := range []struct {
		name    string
		pod     *corev1.Pod
		steps   int64 // the stepBudget asked; 0 for none
		invalid bool
	}{
		{"no annotation", watchedPod(), 0, false},
		{"a step budget", with(`{"stepBudget": 64}`), 64, false},
		{"not JSON", with(`stepBudget: 64`), 0, true},
		{"a field no guard has", with(`{"maxSteps": 64}`), 0, true},
		{"a wrong type", with(`{"stepBudget": "many"}`), 0, true},
		{"a bad value", with(`{"stallTimeout": "soon"}`), 0, true},
		{"null leaves the namespace's", with(`{"stepBudget": null}`), 0, false},
	} {
		g, err := PodGuards(tt.pod)
		if (err != nil) != tt.invalid {
			t.Errorf("%s: error %v, want invalid %v", tt.name, err, tt.invalid)
			continue
		}
		var steps int64
		if g != nil && g.StepBudget != nil {
			steps = int64(*g.StepBudget)
		}
		if steps != tt.steps {
			t.Errorf("%s: stepBudget %d, want %d", tt.name, steps, tt.steps)
		}
	}
}

func TestIsTurnOf(t *testing.T) {
	pod := watchedPod()
	for _, tt := range []struct {
		name string
		turn *twv1.AgentTurn
		want bool
	}{
		{"its own", TurnFor(pod, 0), true},
		{"an earlier Pod's of the name", TurnFor(watchedPod(func(p *corev1.Pod) { p.UID = "earlier" }), 0), false},
		{"a run's", &twv1.AgentTurn{Spec: twv1.AgentTurnSpec{RunName: "job-abc"}}, false},
	} {
		if got := isTurnOf(tt.turn, pod); got != tt.want {
			t.Errorf("%s: isTurnOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestStoppedByManager(t *testing.T) {
	failed := func(class twv1.FaultClass, detector string) *twv1.AgentTurn {
		return &twv1.AgentTurn{Status: twv1.AgentTurnStatus{Outcome: twv1.TurnFailed, Error: &twv1.TurnError{Type: class, Detector: detector}}}
	}
	for _, tt := range []struct {
		name string
		turn *twv1.AgentTurn
		want bool
	}{
		{"a trip", failed(twv1.ClassRunaway, "identicalCalls"), true},
		{"a spent budget", failed(twv1.ClassOverspend, twv1.DetectorBudget), true},
		{"the model's length stop: the agent ended", failed(twv1.ClassLength, "lengthStop"), false},
		{"the agent's exit", failed(twv1.ClassInfra, ""), false},
		{"a success", &twv1.AgentTurn{Status: twv1.AgentTurnStatus{Outcome: twv1.TurnSucceeded}}, false},
	} {
		if got := stoppedByManager(tt.turn); got != tt.want {
			t.Errorf("%s: stoppedByManager = %v, want %v", tt.name, got, tt.want)
		}
	}
}
