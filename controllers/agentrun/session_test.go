package agentrun

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func TestSessionBusy(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	peer := func(name string, at metav1.Time, phase twv1.RunPhase, attempts int32) twv1.AgentRun {
		return twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: at},
			Status: twv1.AgentRunStatus{Phase: phase, Attempts: attempts}}
	}
	me := peer("m", t1, "", 0)
	for _, tc := range []struct {
		name  string
		peers []twv1.AgentRun
		want  string
	}{
		{"alone", nil, ""},
		{"an earlier run is running", []twv1.AgentRun{peer("a", t0, twv1.RunRunning, 1)}, "a"},
		{"an earlier run is pending", []twv1.AgentRun{peer("z", t0, twv1.RunPending, 0)}, "z"},
		{"an earlier run finished", []twv1.AgentRun{peer("a", t0, twv1.RunFaulted, 2)}, ""},
		{"same second, earlier name", []twv1.AgentRun{peer("a", t1, "", 0)}, "a"},
		{"same second, later name", []twv1.AgentRun{peer("n", t1, "", 0)}, ""},
		{"a later run that has not started", []twv1.AgentRun{peer("b", metav1.NewTime(t1.Add(time.Second)), twv1.RunPending, 0)}, ""},
		{"a later run that started anyway", []twv1.AgentRun{peer("b", metav1.NewTime(t1.Add(time.Second)), twv1.RunRunning, 1)}, "b"},
		{"the earliest unfinished is named", []twv1.AgentRun{
			peer("c", t0, twv1.RunPending, 0), peer("a", metav1.NewTime(t0.Add(-time.Second)), twv1.RunRunning, 1),
			peer("old", metav1.NewTime(t0.Add(-time.Hour)), twv1.RunSucceeded, 1),
		}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sessionBusy(&me, tc.peers); got != tc.want {
				t.Errorf("waits for %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResumable(t *testing.T) {
	turn := func(epoch int64, outcome twv1.TurnOutcome, class twv1.FaultClass, steps int64, cost string) twv1.AgentTurn {
		tt := twv1.AgentTurn{Spec: twv1.AgentTurnSpec{Epoch: epoch},
			Status: twv1.AgentTurnStatus{Outcome: outcome, Steps: steps, CostUSD: cost}}
		if class != "" {
			tt.Status.Error = &twv1.TurnError{Type: class}
		}
		return tt
	}
	for _, tc := range []struct {
		name  string
		turns []twv1.AgentTurn
		want  bool
	}{
		{"a new session", nil, false},
		{"succeeded at this epoch", []twv1.AgentTurn{turn(1, twv1.TurnSucceeded, "", 0, "")}, true},
		{"succeeded at an earlier epoch only", []twv1.AgentTurn{turn(0, twv1.TurnSucceeded, "", 3, "0.1")}, false},
		{"tripped at this epoch", []twv1.AgentTurn{turn(1, twv1.TurnFailed, twv1.ClassRunaway, 0, "")}, true},
		{"infra before the agent started", []twv1.AgentTurn{turn(1, twv1.TurnFailed, twv1.ClassInfra, 0, "")}, false},
		{"infra after steps", []twv1.AgentTurn{turn(1, twv1.TurnFailed, twv1.ClassInfra, 2, "")}, true},
		{"aborted after it spent", []twv1.AgentTurn{turn(1, twv1.TurnAborted, "", 0, "0.01")}, true},
		{"aborted with nothing counted", []twv1.AgentTurn{turn(1, twv1.TurnAborted, "", 0, "0.00")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resumable(tc.turns, 1); got != tc.want {
				t.Errorf("resumable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAgentSessionOf(t *testing.T) {
	at := func(name string, epoch int64, sec int64, id string) twv1.AgentTurn {
		return twv1.AgentTurn{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)},
			Spec: twv1.AgentTurnSpec{Epoch: epoch}, Status: twv1.AgentTurnStatus{AgentSessionID: id}}
	}
	for _, tc := range []struct {
		name  string
		turns []twv1.AgentTurn
		want  string
	}{
		{"none", nil, ""},
		{"the one of this epoch", []twv1.AgentTurn{at("a-0", 0, 1, "old"), at("b-0", 1, 2, "x")}, "x"},
		{"the newest wins", []twv1.AgentTurn{at("b-0", 1, 2, "x"), at("c-0", 1, 3, "y")}, "y"},
		{"a newer turn that named none is passed over", []twv1.AgentTurn{at("b-0", 1, 2, "x"), at("c-0", 1, 3, "")}, "x"},
		{"same second: the later name", []twv1.AgentTurn{at("b-1", 1, 2, "z"), at("b-0", 1, 2, "x")}, "z"},
		{"another epoch only", []twv1.AgentTurn{at("a-0", 0, 1, "old")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agentSessionOf(tc.turns, 1); got != tc.want {
				t.Errorf("agentSessionOf = %q, want %q", got, tc.want)
			}
		})
	}
}
