package agentrun

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

func TestRunStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t0 := failedTurn(0, twv1.ClassRunaway, false)
	t0.Spec.Epoch, t0.Status.Steps, t0.Status.CostUSD = 4, 256, "1.25"
	t0.Status.Error.Detector, t0.Status.Error.Message = "stepBudget", "exceeded 256 steps"
	t1 := failedTurn(1, twv1.ClassRunaway, false)
	t1.Spec.Epoch, t1.Status.Steps, t1.Status.CostUSD = 5, 4, "0.0625"
	t1.Status.Error.Detector, t1.Status.Error.Message = "identicalCalls", "repeated an identical tool call 4 times"
	turns := []twv1.AgentTurn{t0, t1}

	run := &twv1.AgentRun{}
	run.Generation = 3
	run.Spec.Session = "s"
	d := decide(run, turns, shared.DefaultConfig().Rerolls)
	st := runStatus(run, turns, d, now)

	if st.Phase != twv1.RunFaulted || st.Attempts != 2 || st.Steps != 260 || st.CostUSD != "1.3125" || st.ObservedGeneration != 3 {
		t.Errorf("phase %s attempts %d steps %d cost %s gen %d", st.Phase, st.Attempts, st.Steps, st.CostUSD, st.ObservedGeneration)
	}
	if st.Epoch != 6 {
		t.Errorf("epoch %d: a faulted session run bumps its latest epoch (5)", st.Epoch)
	}
	want := twv1.Fault{Class: twv1.ClassRunaway, Detector: "identicalCalls", Message: "repeated an identical tool call 4 times", Turn: "r-1"}
	if st.Fault == nil || *st.Fault != want {
		t.Errorf("fault %+v", st.Fault)
	}
	if st.CompletionTime == nil || !st.CompletionTime.Equal(&now) {
		t.Errorf("completion %v", st.CompletionTime)
	}
	f := meta.FindStatusCondition(st.Conditions, ConditionFaulted)
	if f == nil || f.Reason != "Runaway" || f.Message != "turn r-1 failed: runaway (identicalCalls): repeated an identical tool call 4 times; no reroll left (1 of 1 used)" {
		t.Errorf("Faulted %+v", f)
	}

	// Computing again from the written status changes nothing: one write per pass.
	run.Status = st
	later := metav1.NewTime(now.Add(time.Hour))
	if again := runStatus(run, turns, d, later); !equalStatus(again, st) {
		t.Errorf("not stable:\n%+v\n%+v", again, st)
	}
}

func TestRunStatusRunningAndEpoch(t *testing.T) {
	running := twv1.AgentTurn{}
	running.Name, running.Spec.Attempt, running.Spec.Epoch = "r-1", 1, 2
	prev := failedTurn(0, twv1.ClassStalled, false)
	run := &twv1.AgentRun{}
	st := runStatus(run, []twv1.AgentTurn{prev, running}, Decision{Step: stepWait, last: &running}, metav1.Now())
	r := meta.FindStatusCondition(st.Conditions, ConditionReady)
	if st.Phase != twv1.RunRunning || r.Reason != reasonRerolled || st.Epoch != 2 || st.CompletionTime != nil || st.Fault != nil {
		t.Errorf("%+v", st)
	}
	if meta.FindStatusCondition(st.Conditions, ConditionFaulted) != nil {
		t.Errorf("Faulted condition on a running run")
	}
	empty := runStatus(run, nil, Decision{Step: StepCreate}, metav1.Now())
	if empty.Phase != twv1.RunPending || meta.FindStatusCondition(empty.Conditions, ConditionReady).Reason != reasonPending {
		t.Errorf("%+v", empty)
	}
}

func equalStatus(a, b twv1.AgentRunStatus) bool {
	return a.Phase == b.Phase && a.Epoch == b.Epoch && a.CostUSD == b.CostUSD && a.CompletionTime.Equal(b.CompletionTime) &&
		len(a.Conditions) == len(b.Conditions) && a.Conditions[0] == b.Conditions[0] && a.Conditions[1] == b.Conditions[1]
}
