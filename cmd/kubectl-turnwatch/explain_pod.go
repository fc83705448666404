package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// `kubectl turnwatch explain pod/NAME`: the turn of a Pod. A run's turn Pod
// (label turnwatch.dev/run) is explained as its run with that turn; an
// attached Pod (docs/attach.md) as its own AgentTurn, which has no run.

// podPrefixes are the spellings of kind Pod that kubectl takes in TYPE/NAME.
var podPrefixes = []string{"pod/", "pods/", "po/"}

// podArg reads explain's argument: pod/NAME names a Pod, anything else an
// AgentRun (a run's name has no slash).
func podArg(arg string) (name string, ok bool) {
	for _, p := range podPrefixes {
		if len(arg) > len(p) && strings.EqualFold(arg[:len(p)], p) {
			return arg[len(p):], true
		}
	}
	return "", false
}

// explainPod explains the turn of Pod ns/name. A Pod that is gone is
// explained from its attached turn, when it had one.
func explainPod(ctx context.Context, cfg *rest.Config, ns, name, pick string, gap time.Duration) (*explain.Run, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	var got corev1.Pod
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); {
	case err == nil:
		pod = &got
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	if run, turn := runOf(ctx, c, ns, name, pod); run != "" {
		if pick != "" {
			return nil, fmt.Errorf("--turn: Pod %s/%s is one turn's (%s); explain the run, %s, to pick another", ns, name, turn, run)
		}
		return explainRun(ctx, cfg, ns, run, turn, gap)
	}
	if pick != "" {
		return nil, fmt.Errorf("--turn: an attached Pod has one turn, its own")
	}
	at, err := attachedTurn(ctx, c, ns, name, pod)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return explainAttached(ctx, c, cs, at, gap), nil
}

// runOf is the run and turn of a run's turn Pod: its label
// turnwatch.dev/run and its turn (turnOfPod); of a Pod that is gone, the
// run of the turn of its name (a run's turn names its Pod after itself).
// run is empty for any other Pod.
func runOf(ctx context.Context, c client.Client, ns, name string, pod *corev1.Pod) (run, turn string) {
	if pod != nil {
		return pod.Labels[twv1.LabelRun], turnOfPod(pod)
	}
	var at twv1.AgentTurn
	if c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &at) == nil && at.Spec.RunName != "" {
		return at.Spec.RunName, at.Name
	}
	return "", ""
}

// turnOfPod is the turn a run's Pod belongs to: its controller, the
// AgentTurn that created it, else (a Pod made by hand) the Pod's name.
func turnOfPod(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "AgentTurn" {
		return ref.Name
	}
	return pod.Name
}

// attachedTurn is the AgentTurn that records the attached Pod ns/name: the
// turn of that name whose spec.podRef.uid is the Pod's UID, or, when the
// Pod is gone (pod nil), whose spec.podRef names it. A Pod with no turn is
// an error that says what it lacks.
func attachedTurn(ctx context.Context, c client.Client, ns, name string, pod *corev1.Pod) (*twv1.AgentTurn, error) {
	var at twv1.AgentTurn
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &at)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	found := err == nil && at.Spec.PodRef != nil && at.Spec.PodRef.Name == name
	switch {
	case pod == nil && found:
		return &at, nil
	case pod == nil:
		return nil, fmt.Errorf("Pod %s/%s not found, and no attached turn records it", ns, name)
	case found && at.Spec.PodRef.UID == string(pod.UID):
		return &at, nil
	}
	why := notAttached(ctx, c, pod)
	if found {
		why += fmt.Sprintf(" (AgentTurn %s/%s records an earlier Pod of that name, uid %s)", ns, name, at.Spec.PodRef.UID)
	}
	return nil, fmt.Errorf("Pod %s/%s has no turn: %s", ns, name, why)
}

// notAttached says why an existing Pod has no attached turn, in the order
// attach asks for its opt-ins (docs/attach.md#opt-in).
func notAttached(ctx context.Context, c client.Client, pod *corev1.Pod) string {
	if pod.Labels[twv1.LabelWatch] == "" {
		return fmt.Sprintf("it is not labelled %s (docs/attach.md#opt-in), so turnwatch does not guard it", twv1.LabelWatch)
	}
	var ns corev1.Namespace
	// A user who may not read Namespaces is told the other reasons.
	if err := c.Get(ctx, client.ObjectKey{Name: pod.Namespace}, &ns); err == nil && ns.Labels[twv1.LabelAttach] != twv1.AttachEnabled {
		return fmt.Sprintf("its namespace %s is not labelled %s=%s (docs/attach.md#opt-in), so its Pods get no sidecar",
			pod.Namespace, twv1.LabelAttach, twv1.AttachEnabled)
	}
	if !hasSidecar(pod) {
		return fmt.Sprintf("it has no sidecar (%s): it was created before its namespace was labelled, or before the manager "+
			"wrote the namespace's ConfigMap %s (docs/attach.md); a Pod created now gets one", protocol.SidecarContainerName, twv1.AttachParams)
	}
	return fmt.Sprintf("it is labelled %s=%s and has its sidecar, but is not recorded yet: the manager records an attached Pod "+
		"as an AgentTurn of its name (is the manager up? kubectl get agentturns -n %s)", twv1.LabelWatch, pod.Labels[twv1.LabelWatch], pod.Namespace)
}

// hasSidecar says whether the Pod has turnwatch's sidecar.
func hasSidecar(pod *corev1.Pod) bool {
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if c.Name == protocol.SidecarContainerName {
			return true
		}
	}
	return false
}

// explainAttached explains an attached Pod's turn: the turn alone, then
// its stream, read with the format, agent container and guards the turn
// records.
func explainAttached(ctx context.Context, c client.Client, cs kubernetes.Interface, at *twv1.AgentTurn, gap time.Duration) *explain.Run {
	ref := at.Spec.PodRef
	t := explain.Turn{Name: at.Name, Attempt: at.Spec.Attempt, Pod: ref.Name}
	fillTurn(&t, at)
	r := &explain.Run{Namespace: at.Namespace, Name: ref.Name, Phase: attachedPhase(at), Turns: []explain.Turn{t},
		Attached: &explain.Attached{Format: string(ref.Format), AgentContainer: ref.AgentContainer, Owner: ref.Owner}}
	addNotes(ctx, cs, at.Namespace, []types.UID{at.UID, types.UID(ref.UID)}, []twv1.AgentTurn{*at}, r.Turns)
	if e := at.Status.Error; e != nil {
		r.Fault = &explain.Turn{Name: at.Name, Class: string(e.Type), Detector: e.Detector, Message: e.Message}
	}
	r.StreamTurn = at.Name
	var err error
	r.Stream, err = turnStream(ctx, c, cs, at.Namespace, t, func(pod *corev1.Pod) (explain.Options, string, error) {
		return attachedOptions(pod, at)
	}, gap)
	if err != nil {
		r.StreamError = err.Error()
	}
	return r
}

// attachedPhase is the turn's outcome, or Running until it has one.
func attachedPhase(at *twv1.AgentTurn) string {
	if at.Status.Outcome == "" {
		return string(twv1.RunRunning)
	}
	return string(at.Status.Outcome)
}

// attachedOptions are the engine options of an attached Pod's sidecar: its
// env as for a run's turn (sidecarOptions, the guards annotation laid over
// the namespace's guards as the sidecar lays it), with the format, the agent
// container and, where the turn records them, the guards of the turn
// (spec.podRef, spec.guards), as a run's turn takes its format from the run.
func attachedOptions(pod *corev1.Pod, at *twv1.AgentTurn) (explain.Options, string, error) {
	ref := at.Spec.PodRef
	if string(pod.UID) != ref.UID {
		return explain.Options{}, "", fmt.Errorf("Pod %s is a later Pod of the turn's name (uid %s, the turn's %s)", pod.Name, pod.UID, ref.UID)
	}
	opts, _, err := sidecarOptions(pod, "")
	if err != nil {
		return opts, "", err
	}
	opts.Format = string(ref.Format)
	if len(at.Spec.Guards) > 0 {
		if opts.Guards, err = settingsGuards(at.Spec.Guards); err != nil {
			return opts, "", fmt.Errorf("the turn's spec.guards: %w", err)
		}
	}
	return opts, ref.AgentContainer, nil
}

// settingsGuards are a turn's guard settings as the engine's guards: one
// JSON object of the values, read by the engine's own validator.
func settingsGuards(settings []twv1.GuardSetting) (monitor.Guards, error) {
	obj := make(map[string]json.RawMessage, len(settings))
	for _, s := range settings {
		obj[s.Name] = json.RawMessage(s.Value)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return monitor.Guards{}, err
	}
	return monitor.ParseGuards(b)
}
