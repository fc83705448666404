package agentturn

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace := 30 * time.Second
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	cond := func(typ, reason, msg string, ago time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodConditionType(typ), Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: at(ago)}
	}
	summary := func(s protocol.Summary) corev1.PodCondition {
		return cond(protocol.ConditionFinished, protocol.ReasonResult, protocol.Marshal(s), 0)
	}
	exited := func(code int32, reason string, ago time.Duration) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: at(ago)}}}
	}
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}

	cases := []struct {
		name    string
		status  corev1.PodStatus
		outcome twv1.TurnOutcome
		class   twv1.FaultClass
		det     string
		recheck bool
		steps   int
	}{
		{name: "running", status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{name: "trip", status: corev1.PodStatus{Conditions: []corev1.PodCondition{cond(protocol.ConditionTripped, "IdenticalCalls", "x", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassRunaway, det: "identicalCalls"},
		{name: "trip wins over a result", status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			summary(protocol.Summary{Progress: protocol.Progress{Steps: 9}, Result: true, StopReason: "end"}), cond(protocol.ConditionTripped, "Spend", "x", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassOverspend, det: "spend", steps: 9},
		{name: "length stop trip", status: corev1.PodStatus{Conditions: []corev1.PodCondition{cond(protocol.ConditionTripped, "LengthStop", "x", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassLength, det: "lengthStop"},
		{name: "a false Tripped is ignored", status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: protocol.ConditionTripped, Status: corev1.ConditionFalse}}}},
		{name: "success", status: corev1.PodStatus{Conditions: []corev1.PodCondition{summary(protocol.Summary{Progress: protocol.Progress{Steps: 4}, Result: true, StopReason: "end"})}},
			outcome: twv1.TurnSucceeded, steps: 4},
		{name: "the agent's own failure", status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			summary(protocol.Summary{Progress: protocol.Progress{Steps: 2}, Result: true, ResultError: "error_max_turns"})}},
			outcome: twv1.TurnFailed, class: twv1.ClassAgentError, steps: 2},
		{name: "codex turn.failed", status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			summary(protocol.Summary{Result: true, StopReason: "error", ResultError: "unexpected status 400 Bad Request"})}},
			outcome: twv1.TurnFailed, class: twv1.ClassAgentError},
		{name: "sidecar failed condition", status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			cond(protocol.ConditionFailed, protocol.ReasonLogForbidden, `pods "p" is forbidden`, 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "sidecar termination message", status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: protocol.SidecarContainerName, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Message: `PodForbidden: reading the own Pod: pods "p" is forbidden`}}}}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "sidecar exit with another message is not a failure", status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: protocol.SidecarContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Message: `panic: oops`}}}}}},
		{name: "length summary", status: corev1.PodStatus{Conditions: []corev1.PodCondition{summary(protocol.Summary{Result: true, StopReason: "length"})}},
			outcome: twv1.TurnFailed, class: twv1.ClassLength, det: "lengthStop"},
		{name: "no result, agent exited 0", status: corev1.PodStatus{Conditions: []corev1.PodCondition{summary(protocol.Summary{})},
			ContainerStatuses: []corev1.ContainerStatus{exited(0, "Completed", 0)}}, outcome: twv1.TurnFailed, class: twv1.ClassNoSignal},
		{name: "no result, agent exited 1", status: corev1.PodStatus{Conditions: []corev1.PodCondition{summary(protocol.Summary{})},
			ContainerStatuses: []corev1.ContainerStatus{exited(1, "Error", 0)}}, outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "no result, exit not reported yet", status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{summary(protocol.Summary{})}},
			recheck: true},
		{name: "no result, exit never reported", status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond(protocol.ConditionFinished, protocol.ReasonNoResult, protocol.Marshal(protocol.Summary{}), time.Minute)}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "image pull backoff", status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("agent", "ImagePullBackOff")}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "sidecar image broken", status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{waiting("turnwatch-sidecar", "InvalidImageName")}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "sidecar crash loop", status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{waiting("turnwatch-sidecar", "CrashLoopBackOff")}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "first pull error waits for backoff", status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("agent", "ErrImagePull")}}},
		{name: "evicted", status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "oom, pod over", status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{exited(137, "OOMKilled", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "exit 0 without Finished, pod over", status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{exited(0, "Completed", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassNoSignal},
		{name: "exit 2 without Finished, pod over", status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{exited(2, "Error", 0)}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "exited, pod not over, within grace", status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited(0, "Completed", 10*time.Second)}},
			recheck: true},
		{name: "exited, pod not over, grace passed", status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited(3, "Error", time.Minute)}},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "pod failed before the agent ran", status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError"},
			outcome: twv1.TurnFailed, class: twv1.ClassInfra},
		{name: "progress counts", status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			cond(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":17,"costUSD":"0.5"}`, 0)}}, steps: 17},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: c.status}
			v := Judge(pod, "agent", now, grace)
			if v.Outcome != c.outcome || (v.recheck > 0) != c.recheck {
				t.Fatalf("outcome %q recheck %s; want %q recheck %v (%+v)", v.Outcome, v.recheck, c.outcome, c.recheck, v.Err)
			}
			if c.class != "" && (v.Err == nil || v.Err.Type != c.class || v.Err.Detector != c.det || v.Err.Message == "") {
				t.Errorf("error %+v; want class %s detector %q and a message", v.Err, c.class, c.det)
			}
			if c.class == "" && v.Err != nil {
				t.Errorf("unexpected error %+v", v.Err)
			}
			if c.steps != 0 && (v.Counts == nil || v.Counts.Steps != int64(c.steps)) {
				t.Errorf("counts %+v, want %d steps", v.Counts, c.steps)
			}
		})
	}
}

func TestJudgeNudge(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: protocol.ConditionSilent, Status: corev1.ConditionTrue, Reason: "SilentRun", Message: "13 tool-only messages"}}}}
	if v := Judge(pod, "agent", time.Now(), time.Second); v.Nudge != "13 tool-only messages" || v.Outcome != "" {
		t.Errorf("%+v", v)
	}
}
