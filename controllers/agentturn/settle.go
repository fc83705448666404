package agentturn

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/quote"
)

// Verdict is what a turn's Pod says about the turn.
type Verdict struct {
	// Outcome is empty while the turn goes on.
	Outcome twv1.TurnOutcome
	Err     *twv1.TurnError
	// tripped is true when the sidecar's Tripped condition decided it.
	tripped bool
	// Counts are the sidecar's latest steps and cost, when it reported any;
	// Progress its Progress condition, which a summary must not undercut
	// (setTurnCounts).
	Counts, Progress *protocol.Progress
	// agentSession is the CLI's own session id, when a summary named one.
	agentSession string
	// Nudge is the silent-run nudge's text, when the sidecar reported one.
	Nudge string
	// drill is what a drill turn's scripted model served, refusedCall the
	// call the agent's hook refused: both as the sidecar reported them.
	drill       *protocol.DrillReport
	RefusedCall string
	// WouldTrips are the audited detectors' would-trips the sidecar reported.
	WouldTrips []protocol.WouldTrip
	// streamCost is the cost the agent's stream reported, kept beside the
	// gateway's metered cost (protocol.Progress.StreamCost, in a summary or
	// a trip's progress); 0 when the sidecar reported none.
	streamCost monitor.Money
	// Warnings are the sidecar's protocol.Warnings on the Pod (reason ->
	// message): DeltasHidden, HooksNotRun, CostMismatch, FormatMismatch, LogRotated.
	Warnings map[string]string
	// recheck asks to look again after this long (waiting for the sidecar's
	// Finished condition after the agent exited).
	recheck time.Duration
	// checkTail says the verdict (no-signal) was made without the whole
	// stream: the log's tail must be read before it stands (tail.go).
	checkTail bool
}

// Tripped says whether the sidecar's Tripped condition decided the verdict.
func (v Verdict) Tripped() bool { return v.tripped }

// Recheck is how long to wait before looking at the Pod again (0: until it
// changes).
func (v Verdict) Recheck() time.Duration { return v.recheck }

// Container waiting reasons that will not fix themselves.
var brokenWaiting = map[string]bool{
	"ImagePullBackOff":           true,
	"ErrImagePull":               false, // the kubelet retries; BackOff follows
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	// Only native sidecars restart (the Pod's restartPolicy is Never): the
	// watchdog (or a sidecar of the template) keeps crashing, and an
	// unwatched agent is what turnwatch exists to prevent.
	"CrashLoopBackOff": true,
}

// Judge reads the turn's Pod. It is pure; now and grace come from the caller's
// clock and config. The order of the rules is the protocol's: a trip wins over
// everything; then the sidecar's final summary; then what the kubelet says.
func Judge(pod *corev1.Pod, agent string, now time.Time, grace time.Duration) Verdict {
	rep := readPod(pod)
	v := Verdict{Counts: rep.Counts, Progress: rep.Progress, Nudge: rep.Nudge, drill: rep.Drill,
		RefusedCall: rep.RefusedCall, WouldTrips: rep.WouldTrips, Warnings: rep.Warnings, streamCost: streamCostOf(rep)}
	if t := rep.Trip; t != nil {
		v.Outcome, v.tripped = twv1.TurnFailed, true
		v.Err = &twv1.TurnError{Type: shared.ClassOf(t.Detector), Detector: t.Detector, Message: t.Message}
		return v
	}
	if msg := sidecarFailed(pod, rep.Failure); msg != "" {
		return fail(v, twv1.ClassInfra, msg)
	}
	if rep.Finished != nil {
		return judgeFinished(v, pod, agent, rep, now, grace)
	}
	if msg := brokenContainer(pod); msg != "" {
		return fail(v, twv1.ClassInfra, msg)
	}
	if shared.PodTerminal(pod) {
		return needTail(judgeExit(v, pod, agent), false)
	}
	if t := agentTerminated(pod, agent); t != nil {
		// The agent exited but the Pod is not over: give the sidecar time to
		// read the rest of the log and write its Finished condition.
		if wait := t.FinishedAt.Add(grace).Sub(now); wait > 0 {
			v.recheck = wait
			return v
		}
		return needTail(judgeExit(v, pod, agent), false)
	}
	return v
}

// judgeFinished settles from the sidecar's summary. A result settles at once;
// no result waits for the agent's exit code, which tells infra (non-zero,
// OOM) from no-signal (a clean exit that never said it was done).
func judgeFinished(v Verdict, pod *corev1.Pod, agent string, rep protocol.PodReport, now time.Time, grace time.Duration) Verdict {
	sum := *rep.Finished
	v.agentSession = sum.AgentSessionID
	if v, ok := judgeResult(v, sum); ok {
		return v
	}
	if agentTerminated(pod, agent) == nil && !shared.PodTerminal(pod) {
		if wait := rep.FinishedAt.Add(grace).Sub(now); wait > 0 {
			v.recheck = wait
			return v
		}
	}
	return needTail(judgeExit(v, pod, agent), sum.Complete)
}

// judgeResult settles from a summary that carries the agent's final word
// (protocol.Summary.Ending): a length stop, a result that reports a failure,
// or a result. ok is false when it carries none of them. The log-tail path
// settles by it too (fromTail).
func judgeResult(v Verdict, sum protocol.Summary) (Verdict, bool) {
	ending, msg := sum.Ending()
	switch ending {
	case protocol.EndedLength:
		v.Outcome = twv1.TurnFailed
		v.Err = &twv1.TurnError{Type: twv1.ClassLength, Detector: monitor.DetectorLengthStop, Message: msg}
		return v, true
	case protocol.EndedAgentError:
		return fail(v, twv1.ClassAgentError, msg), true
	case protocol.EndedResult:
		v.Outcome, v.Err = twv1.TurnSucceeded, nil
		return v, true
	}
	return v, false
}

// judgeExit settles a turn whose agent is over without a trip or a result:
// infra when the Pod or the container broke, no-signal when the agent exited
// cleanly without a final result event.
func judgeExit(v Verdict, pod *corev1.Pod, agent string) Verdict {
	if pod.Status.Reason == "Evicted" {
		return fail(v, twv1.ClassInfra, "the pod was evicted: "+pod.Status.Message)
	}
	if c := PodCondition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return fail(v, twv1.ClassInfra, fmt.Sprintf("the pod was disrupted: %s: %s", c.Reason, c.Message))
	}
	t := agentTerminated(pod, agent)
	switch {
	case t == nil:
		msg := "the pod ended before the agent container ran"
		if pod.Status.Reason != "" {
			msg += ": " + pod.Status.Reason
		}
		return fail(v, twv1.ClassInfra, msg)
	case t.Reason == "OOMKilled":
		return fail(v, twv1.ClassInfra, fmt.Sprintf("the agent container was OOM-killed (exit code %d)", t.ExitCode))
	case t.ExitCode != 0:
		return fail(v, twv1.ClassInfra, fmt.Sprintf("the agent container exited with code %d without a final result", t.ExitCode))
	}
	return fail(v, twv1.ClassNoSignal, "the agent exited without a final result event")
}

// fail settles the turn failed with msg, escaped (quote.Text): it may quote
// the agent's own error text, or a message a Pod's status carries.
func fail(v Verdict, class twv1.FaultClass, msg string) Verdict {
	v.Outcome = twv1.TurnFailed
	v.Err = &twv1.TurnError{Type: class, Message: quote.Text(msg)}
	return v
}

// sidecarFailed says why the watchdog gave up, if it did: its Failed
// condition, or (when the Pod's status was refused to it too) its
// termination message with one of protocol.SidecarFailureReasons. The agent
// would run unwatched: the turn fails infra with the reason.
func sidecarFailed(pod *corev1.Pod, f *protocol.Failure) string {
	if f != nil {
		return fmt.Sprintf("the watchdog sidecar gave up: %s: %s", f.Reason, f.Message)
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name != protocol.SidecarContainerName {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			if reason, msg, ok := protocol.SidecarFailure(t.Message); ok {
				return fmt.Sprintf("the watchdog sidecar gave up: %s: %s", reason, msg)
			}
		}
	}
	return ""
}

// brokenContainer names a container (agent or sidecar) stuck in a state that
// will not fix itself, such as an image that cannot be pulled.
func brokenContainer(pod *corev1.Pod) string {
	all := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil && brokenWaiting[w.Reason] {
			return fmt.Sprintf("container %s cannot start: %s: %s", cs.Name, w.Reason, w.Message)
		}
	}
	return ""
}

func agentTerminated(pod *corev1.Pod, agent string) *corev1.ContainerStateTerminated {
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; cs.Name == agent {
			return cs.State.Terminated
		}
	}
	return nil
}

func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// streamCostOf is the stream's cost in the sidecar's last report: the
// final summary, else the one written at the result, else its progress
// (a trip's).
func streamCostOf(rep protocol.PodReport) monitor.Money {
	for _, sum := range []*protocol.Summary{rep.Finished, rep.Result} {
		if sum != nil && sum.StreamCost > 0 {
			return sum.StreamCost
		}
	}
	if rep.Progress != nil {
		return rep.Progress.StreamCost
	}
	return 0
}

// readPod reads what the turn's Pod's conditions say (protocol.Read).
func readPod(pod *corev1.Pod) protocol.PodReport {
	conds := make([]protocol.PodCondition, len(pod.Status.Conditions))
	for i, c := range pod.Status.Conditions {
		conds[i] = protocol.PodCondition{
			Condition: protocol.Condition{Type: string(c.Type), Reason: c.Reason, Message: c.Message},
			True:      c.Status == corev1.ConditionTrue, Since: c.LastTransitionTime.Time,
		}
	}
	return protocol.Read(conds)
}
