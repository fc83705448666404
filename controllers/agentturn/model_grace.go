package agentturn

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A turn whose sidecar serves its agent's model (the model gateway, or a
// drill's scripted model: the Pod's turnwatch.dev/model-port label) ends
// its agent without a signal after a stopping trip: the sidecar answers
// the agent's next model request with a refusal the CLI does not retry,
// and the CLI ends its turn there (docs/gateway.md). So the controller
// leaves a running agent ModelTripGrace after the trip to end by itself
// before it stops the Pod; stopping stays the backstop, for an agent
// whose tool never returns to ask the model again. The turn settles at
// the agent's end or at the stop, and an Event tells which it was.

// ModelTripGrace is how long after a stopping trip the controller waits
// for the agent of a Pod that serves its model to end by itself: the
// CLIs end within 2 s of the refusal of a request that follows the trip
// (docs/gateway.md), the trip's time, as the Pod's condition says it, is
// whole seconds, and the kubelet reports an exited container up to a few
// seconds late on a busy node (seen: 2.3 s): a shorter grace stopped, and
// warned of, agents that had ended by themselves.
const ModelTripGrace = 5 * time.Second

// Event reasons of the end of a tripped turn whose Pod serves its model.
const (
	// EventAgentEnded: the agent ended by itself after the trip, no signal
	// sent (the gateway refused its next model request).
	EventAgentEnded = "AgentEnded"
	// EventAgentStopped: the agent still ran ModelTripGrace after the trip,
	// and its Pod was stopped.
	EventAgentStopped = "AgentStopped"
)

// servesModel says whether the Pod's sidecar serves its agent's model.
func servesModel(pod *corev1.Pod) bool {
	_, ok := pod.Labels[twv1.LabelModelPort]
	return ok
}

// tripTime is when the sidecar tripped, as its Tripped condition says,
// never after now; ok is false when the condition tells no time.
func tripTime(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	c := PodCondition(pod, protocol.ConditionTripped)
	if c == nil || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	if at := c.LastTransitionTime.Time; !at.After(now) {
		return at, true
	}
	return now, true
}

// holdForAgent holds a tripped turn's verdict while the agent of a Pod
// that serves its model runs and ModelTripGrace since the trip has not
// passed: the turn settles, and the Pod is stopped, only after. It asks to
// be woken at the deadline; the agent's exit wakes it sooner.
func holdForAgent(v Verdict, pod *corev1.Pod, agent string, now time.Time) Verdict {
	if !v.tripped || !servesModel(pod) || !agentRunning(pod, agent) {
		return v
	}
	at, ok := tripTime(pod, now)
	if !ok {
		return v
	}
	wait := at.Add(ModelTripGrace).Sub(now)
	if wait <= 0 {
		return v
	}
	v.Outcome, v.Err, v.tripped = "", nil, false
	v.recheck = minPositive(v.recheck, wait)
	return v
}

// recordAgentEnd tells how a tripped turn's agent of a Pod that serves its
// model ended: by itself, or stopped after the grace. Called once, as the
// turn settles.
func (r *AgentTurnReconciler) recordAgentEnd(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod, agent string, tripped bool) {
	if !tripped || !servesModel(pod) {
		return
	}
	at, ok := tripTime(pod, r.Clock.Now())
	if t := agentTerminated(pod, agent); t != nil && ok {
		after := max(0, t.FinishedAt.Sub(at)).Round(100 * time.Millisecond)
		log.FromContext(ctx).Info("the agent ended by itself after the trip", "pod", pod.Name, "after", after)
		r.Recorder.Eventf(run, turn, corev1.EventTypeNormal, EventAgentEnded, "Stop",
			"turn %s: the agent ended by itself %s after the trip, no signal sent: the sidecar refused its next model request", turn.Name, after)
		return
	}
	if agentRunning(pod, agent) {
		log.FromContext(ctx).Info("the agent did not end by itself after the trip; stopped it", "pod", pod.Name, "grace", ModelTripGrace)
		r.Recorder.Eventf(run, turn, corev1.EventTypeWarning, EventAgentStopped, "Stop",
			"turn %s: the agent still ran %s after the trip (a tool that does not return to the model?): its pod %s was stopped", turn.Name, ModelTripGrace, pod.Name)
	}
}
