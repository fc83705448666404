package agentturn

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The controller reads the agent's log tail itself before it settles a turn
// no-signal on a summary that did not cover the whole stream. It holds
// pods/log only where turns run: see identity.go.

// LogTail opens the last lines of a container's log.
type LogTail func(ctx context.Context, namespace, pod, container string, lines int64) (io.ReadCloser, error)

// KubeLogTail reads logs through the pods/log API with cfg's credential.
func KubeLogTail(cfg *rest.Config) (LogTail, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, namespace, pod, container string, lines int64) (io.ReadCloser, error) {
		return cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines}).Stream(ctx)
	}, nil
}

const (
	// tailLines is how much of the log's end the controller reads: the final
	// result event is the last or nearly the last line of a turn.
	tailLines = 200
	// tailTimeout bounds one read of the tail.
	tailTimeout = 20 * time.Second
	// tailRetry is how soon a failed read of the tail is tried again.
	tailRetry = 5 * time.Second
)

// needTail marks a no-signal verdict made without the whole stream (no
// summary, or one the sidecar's drain deadline cut short): the controller
// must read the log's tail before it settles so.
func needTail(v Verdict, complete bool) Verdict {
	if !complete && v.Outcome == twv1.TurnFailed && v.Err != nil && v.Err.Type == twv1.ClassNoSignal {
		v.checkTail = true
	}
	return v
}

// fromTail settles a no-signal verdict by what the log's tail says: the
// agent's final word there settles the turn as the summary would have, by
// the same rules (judgeResult).
func fromTail(v Verdict, rep monitor.Report) Verdict {
	v.checkTail = false
	if settled, ok := judgeResult(v, protocol.SummaryOf(rep)); ok {
		return settled
	}
	v.Err = &twv1.TurnError{Type: twv1.ClassNoSignal,
		Message: v.Err.Message + " (the watchdog's read was cut short; the log's last lines hold none either)"}
	return v
}

// checkTail reads the agent's log tail for a verdict that needs it. A tail
// that cannot be read is tried again until settleGrace after the agent
// ended; then the turn settles no-signal, saying so.
func (r *AgentTurnReconciler) checkTail(ctx context.Context, run *twv1.AgentRun, pod *corev1.Pod, v Verdict, now time.Time) Verdict {
	if r.LogTail == nil {
		return v
	}
	agent := render.AgentContainerName(run)
	rep, err := readTail(ctx, r.LogTail, pod, agent, string(run.Spec.Format))
	if err == nil {
		log.FromContext(ctx).Info("read the agent's log tail", "pod", pod.Name, "result", rep.Result, "lines", rep.Lines)
		return fromTail(v, rep)
	}
	log.FromContext(ctx).Info("reading the agent's log tail failed", "pod", pod.Name, "err", err.Error())
	if t := agentTerminated(pod, agent); t == nil || now.Sub(t.FinishedAt.Time) < r.Config.SettleGrace.Duration {
		return Verdict{Counts: v.Counts, Nudge: v.Nudge, recheck: tailRetry}
	}
	v.checkTail = false
	v.Err = &twv1.TurnError{Type: twv1.ClassNoSignal, Message: v.Err.Message + "; the log's tail could not be read: " + err.Error()}
	return v
}

// readTail reads the last tailLines lines of the agent container's log.
func readTail(ctx context.Context, tail LogTail, pod *corev1.Pod, container, format string) (monitor.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, tailTimeout)
	defer cancel()
	rc, err := tail(ctx, pod.Namespace, pod.Name, container, tailLines)
	if err != nil {
		return monitor.Report{}, fmt.Errorf("opening the log: %w", err)
	}
	defer rc.Close()
	return monitor.ReadTail(format, rc, 0)
}
