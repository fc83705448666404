package agentturn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// No-signal is never settled on a summary that did not cover the whole
// stream, nor without a summary: the verdict asks for the log's tail.
func TestJudgeNeedsTail(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exited := corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now.Add(-time.Minute))}}}
	finished := func(s protocol.Summary) corev1.PodCondition {
		return corev1.PodCondition{Type: protocol.ConditionFinished, Status: corev1.ConditionTrue, Reason: protocol.ReasonNoResult,
			Message: protocol.Marshal(s), LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}
	}
	cases := []struct {
		name string
		st   corev1.PodStatus
		tail bool
	}{
		{"complete summary: no-signal stands", corev1.PodStatus{Phase: corev1.PodSucceeded,
			Conditions: []corev1.PodCondition{finished(protocol.Summary{Complete: true})}, ContainerStatuses: []corev1.ContainerStatus{exited}}, false},
		{"incomplete summary: read the tail", corev1.PodStatus{Phase: corev1.PodSucceeded,
			Conditions: []corev1.PodCondition{finished(protocol.Summary{})}, ContainerStatuses: []corev1.ContainerStatus{exited}}, true},
		{"no summary: read the tail", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{exited}}, true},
		{"no summary, pod running, grace over: read the tail", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited}}, true},
		{"infra needs no tail", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "agent",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(&corev1.Pod{Status: c.st}, "agent", now, 30*time.Second)
			if v.checkTail != c.tail {
				t.Errorf("checkTail %v, want %v (%+v)", v.checkTail, c.tail, v.Err)
			}
		})
	}
}

func TestFromTail(t *testing.T) {
	noSignal := Verdict{Outcome: twv1.TurnFailed, Err: &twv1.TurnError{Type: twv1.ClassNoSignal, Message: "x"}, checkTail: true}
	cases := []struct {
		name    string
		rep     monitor.Report
		outcome twv1.TurnOutcome
		class   twv1.FaultClass
	}{
		{"a result in the tail", monitor.Report{Result: true, StopReason: "end"}, twv1.TurnSucceeded, ""},
		{"the agent's failure in the tail", monitor.Report{Result: true, ResultError: "boom"}, twv1.TurnFailed, twv1.ClassAgentError},
		{"a length stop in the tail", monitor.Report{Result: true, StopReason: "length"}, twv1.TurnFailed, twv1.ClassLength},
		{"nothing in the tail", monitor.Report{}, twv1.TurnFailed, twv1.ClassNoSignal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := noSignal
			in.Err = &twv1.TurnError{Type: twv1.ClassNoSignal, Message: "x"}
			v := fromTail(in, c.rep)
			if v.Outcome != c.outcome || v.checkTail || (c.class == "") != (v.Err == nil) || v.Err != nil && v.Err.Type != c.class {
				t.Errorf("got %s %+v checkTail %v; want %s %s", v.Outcome, v.Err, v.checkTail, c.outcome, c.class)
			}
		})
	}
}

// The log-reading part against a fake API server: the request asks for the
// agent container's last lines, and the tail is read as the format says.
func TestReadTail(t *testing.T) {
	log := strings.Join([]string{
		`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn"}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.1}`,
	}, "\n") + "\n"
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/pods/p/log" {
			http.NotFound(w, r)
			return
		}
		query = r.URL.RawQuery
		_, _ = w.Write([]byte(log))
	}))
	defer srv.Close()
	lt, err := KubeLogTail(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	rep, err := readTail(context.Background(), lt, pod, "agent", "claude")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Result || rep.StopReason != "end" || rep.ResultError != "" {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(query, "container=agent") || !strings.Contains(query, "tailLines=200") {
		t.Errorf("query %q", query)
	}
}
