package agentturn

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// Event reasons of a turn's start and end (on the AgentRun).
const (
	// EventGraceRaised: the template's terminationGracePeriodSeconds was
	// too short for the sidecar to drain and report, and was raised.
	EventGraceRaised = "GraceRaised"
	// EventGuardsCapped: a turn's spec.guards asked more than the limits in
	// force when its Pod was rendered, and the Pod runs with the limits
	// (podGuards): the turn was made before a limit was lowered, or written
	// by someone other than the run controller.
	EventGuardsCapped = "GuardsCapped"
	// EventStoppedAfterResult: the agent printed its final result but did
	// not exit within exitGrace, so its Pod was stopped.
	EventStoppedAfterResult = "StoppedAfterResult"
)

const (
	// quotaRetryMax caps the wait between two creations of a Pod that a
	// ResourceQuota refused (nothing tells the controller when quota frees).
	quotaRetryMax = 30 * time.Second
)

// graceRaised tells the run's owner that its template's grace was raised.
// guardsCapped says which of the turn's guards its Pod runs capped.
func (r *AgentTurnReconciler) guardsCapped(run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod, policies []turnpolicy.AppliedPolicy) {
	caps := turnpolicy.RenderCaps(run, turn, r.Config.Guards, policies)
	if len(caps) == 0 {
		return
	}
	r.Recorder.Eventf(run, turn, corev1.EventTypeWarning, EventGuardsCapped, "RenderPod",
		"pod %s runs with the limits in force, not the turn's spec.guards: %s", pod.Name, strings.Join(caps, "; "))
}

func (r *AgentTurnReconciler) graceRaised(run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod) {
	from := run.Spec.Template.Spec.TerminationGracePeriodSeconds
	to := pod.Spec.TerminationGracePeriodSeconds
	if from == nil || to == nil || *from == *to {
		return
	}
	r.Recorder.Eventf(run, turn, corev1.EventTypeNormal, EventGraceRaised, "RenderPod",
		"pod %s: terminationGracePeriodSeconds raised from %d to %d so that the sidecar can read the agent's output to its end and report",
		pod.Name, *from, *to)
}

// createRefused handles a Pod creation the API server refused.
//   - AlreadyExists: a Pod of the turn's name is there; it may be the turn's
//     own (the cache has not seen it yet) or someone else's.
//   - Invalid, Forbidden (Pod Security, an admission policy, a LimitRange):
//     trying again cannot help: the turn fails as infra with the message.
//   - Forbidden by a ResourceQuota: quota may free up; retried with backoff
//     until startTimeout, then infra with the message.
func (r *AgentTurnReconciler) createRefused(ctx context.Context, turn *twv1.AgentTurn, name string, err error) (ctrl.Result, error) {
	switch {
	case apierrors.IsAlreadyExists(err):
		pod := &corev1.Pod{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: turn.Namespace, Name: name}, pod); err != nil {
			return ctrl.Result{}, client404(err) // gone again: create it on the next pass
		}
		if !metav1.IsControlledBy(pod, turn) {
			return r.podInTheWay(ctx, turn, pod)
		}
		return ctrl.Result{}, r.recordPod(ctx, turn, name)
	case quotaExceeded(err):
		now := r.Clock.Now()
		elapsed := now.Sub(turn.CreationTimestamp.Time)
		if left := r.Config.StartTimeout.Duration - elapsed; left > 0 {
			wait := quotaRetry(elapsed, left)
			log.FromContext(ctx).Info("the pod was refused by a quota; retrying", "err", err.Error(), "in", wait)
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		return ctrl.Result{}, r.failInfra(ctx, turn, fmt.Sprintf("the pod was refused for %s: %s", r.Config.StartTimeout.Duration, err.Error()))
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return ctrl.Result{}, r.failInfra(ctx, turn, "the pod was refused: "+err.Error())
	}
	return ctrl.Result{}, err
}

// client404 turns NotFound into a retry: the Pod in the way went between
// the create and the read.
func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("a pod of this name was there and is gone: trying again")
	}
	return err
}

// quotaExceeded says whether a ResourceQuota refused the creation for lack
// of room (which may come), not for a missing request or limit (which will
// not).
func quotaExceeded(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	// "status unknown": a quota just made, not counted yet by its controller.
	return strings.Contains(msg, "exceeded quota") || strings.Contains(msg, "status unknown for quota")
}

// quotaRetry is the wait before the next creation: about the time waited
// so far (so the waits double), at least 1 s, at most quotaRetryMax, and
// never past the deadline.
func quotaRetry(elapsed, left time.Duration) time.Duration {
	return min(max(elapsed, time.Second), quotaRetryMax, left)
}

// recordPod records the Pod the turn created.
func (r *AgentTurnReconciler) recordPod(ctx context.Context, turn *twv1.AgentTurn, name string) error {
	log.FromContext(ctx).Info("created pod", "pod", name)
	st := turn.Status.DeepCopy()
	st.PodName = name
	st.StartTime = shared.PtrTime(metav1.NewTime(r.Clock.Now()))
	return r.writeStatus(ctx, turn, st)
}

// podUncached handles a Pod the API server has and the cache does not. The
// turn's own Pod is only late in the cache, unless it lost the run label the
// cache selects on; any other Pod of the turn's name is in the way.
func (r *AgentTurnReconciler) podUncached(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	if !metav1.IsControlledBy(pod, turn) {
		return r.podInTheWay(ctx, turn, pod)
	}
	if _, ok := pod.Labels[twv1.LabelRun]; ok {
		return ctrl.Result{RequeueAfter: time.Second}, nil // the cache lags; its add event comes too
	}
	if err := r.stop(ctx, pod); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.failInfra(ctx, turn, fmt.Sprintf("the pod %s lost its %s label: turnwatch cannot follow it", pod.Name, twv1.LabelRun))
}

// earlierTurnsPod says whether pod was made for an AgentTurn of this name
// that is gone (its run was deleted and made again): the garbage collector
// removes it, and its deletion wakes the turn (Owns maps it by name).
func earlierTurnsPod(pod *corev1.Pod, turn *twv1.AgentTurn) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "AgentTurn" && ref.APIVersion == twv1.GroupVersion.String() &&
		ref.Name == turn.Name && ref.UID != turn.UID
}

// judgeStart fails a turn whose Pod has not started within timeout of its
// creation, with what the scheduler or the kubelet says. Until then it asks
// to be woken at the deadline: nothing else may change on a stuck Pod.
func judgeStart(v Verdict, pod *corev1.Pod, agent string, created, now time.Time, timeout time.Duration) Verdict {
	if v.Outcome != "" || podStarted(pod, agent) {
		return v
	}
	if wait := created.Add(timeout).Sub(now); wait > 0 {
		v.recheck = minPositive(v.recheck, wait)
		return v
	}
	return fail(v, twv1.ClassInfra, fmt.Sprintf("the pod did not start within %s: %s", timeout, pendingReason(pod)))
}

// podStarted says whether the Pod got going: past Pending, the agent
// started, or the sidecar reported.
func podStarted(pod *corev1.Pod, agent string) bool {
	if p := pod.Status.Phase; p != "" && p != corev1.PodPending {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == agent && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return readPod(pod).Started
}

// pendingReason is what holds a Pending Pod back: the scheduler's reason,
// else the first waiting container's (init containers first, as the kubelet
// starts them).
func pendingReason(pod *corev1.Pod) string {
	if c := PodCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return fmt.Sprintf("not scheduled: %s: %s", c.Reason, c.Message)
	}
	all := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			msg := fmt.Sprintf("container %s is waiting: %s", cs.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + w.Message
			}
			return msg
		}
	}
	if pod.Status.Phase == "" {
		return "no node took it"
	}
	return "it is still " + string(pod.Status.Phase)
}

// judgeHang settles a turn whose agent printed its final result (the
// sidecar's Result condition) but has neither exited nor ended its output
// within exitGrace: Succeeded (keepStopped then stops the Pod).
func judgeHang(v Verdict, pod *corev1.Pod, agent string, now time.Time, exitGrace time.Duration) Verdict {
	rep := readPod(pod)
	if v.Outcome != "" || rep.FinishedSeen || shared.PodTerminal(pod) || agentTerminated(pod, agent) != nil || rep.Result == nil {
		return v
	}
	if wait := rep.ResultAt.Add(exitGrace).Sub(now); wait > 0 {
		v.recheck = minPositive(v.recheck, wait)
		return v
	}
	// The message is the sidecar's summary at the result; an older
	// sidecar's prose means a plain result (protocol.Read).
	v, _ = judgeResult(v, *rep.Result)
	return v
}

// hangDeadline is when a succeeded turn's agent that is still running is
// stopped: exitGrace after its result was seen (the sidecar's Result or
// Finished condition), or after the turn settled. ok is false when the agent
// is not running.
func hangDeadline(turn *twv1.AgentTurn, pod *corev1.Pod, agent string, exitGrace time.Duration) (time.Time, bool) {
	if shared.PodTerminal(pod) || !agentRunning(pod, agent) {
		return time.Time{}, false
	}
	var since time.Time
	if turn.Status.CompletionTime != nil {
		since = turn.Status.CompletionTime.Time
	}
	rep := readPod(pod)
	switch {
	case rep.Result != nil && !rep.ResultAt.IsZero():
		since = rep.ResultAt
	case rep.Finished != nil && !rep.FinishedAt.IsZero():
		since = rep.FinishedAt
	}
	return since.Add(exitGrace), true
}

func agentRunning(pod *corev1.Pod, agent string) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == agent {
			return cs.State.Running != nil
		}
	}
	return false
}

// stopHung stops the Pod of a succeeded turn whose agent did not exit
// within exitGrace of its result: a done agent must not run (and cost) on.
func (r *AgentTurnReconciler) stopHung(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	deadline, running := hangDeadline(turn, pod, render.AgentContainerName(run), r.Config.ExitGrace.Duration)
	// The memo: a stop this process wrote that the cache does not show yet.
	if !running || isStopped(pod) || r.stopped.Stale(pod.UID, false, r.Clock.Now()) {
		return ctrl.Result{}, nil
	}
	if wait := deadline.Sub(r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.stop(ctx, pod); err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("the agent printed its final result but did not exit; stopped it", "pod", pod.Name, "exitGrace", r.Config.ExitGrace.Duration)
	r.Recorder.Eventf(run, turn, corev1.EventTypeNormal, EventStoppedAfterResult, "Stop",
		"turn %s: the agent printed its final result but did not exit within %s: its pod %s was stopped", turn.Name, r.Config.ExitGrace.Duration, pod.Name)
	return ctrl.Result{}, nil
}

func isStopped(pod *corev1.Pod) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	return d != nil && *d == 1
}

// minPositive is the sooner of two waits, where 0 means none.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	if b <= 0 {
		return a
	}
	return min(a, b)
}

// startedAt is when the turn's Pod was created, on the controller's clock.
func startedAt(turn *twv1.AgentTurn) time.Time {
	if t := turn.Status.StartTime; t != nil {
		return t.Time
	}
	return turn.CreationTimestamp.Time
}
