package agentrun

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

func failedTurn(attempt int32, class twv1.FaultClass, cont bool) twv1.AgentTurn {
	t := twv1.AgentTurn{}
	t.Name = TurnName("r", attempt)
	t.Spec.Attempt, t.Spec.Continue = attempt, cont
	t.Status.Outcome = twv1.TurnFailed
	t.Status.Error = &twv1.TurnError{Type: class}
	return t
}

func TestDecide(t *testing.T) {
	def := shared.DefaultConfig().Rerolls
	running := twv1.AgentTurn{}
	running.Spec.Attempt = 0
	succeeded := running
	succeeded.Status.Outcome = twv1.TurnSucceeded
	aborted := running
	aborted.Status.Outcome = twv1.TurnAborted

	cases := []struct {
		name    string
		run     func(*twv1.AgentRun)
		turns   []twv1.AgentTurn
		step    step
		attempt int32
		why     string
	}{
		{"first turn", nil, nil, StepCreate, 0, ""},
		{"cancelled before a turn", func(r *twv1.AgentRun) { r.Spec.Cancel = true }, nil, stepAbort, 0, ""},
		{"running", nil, []twv1.AgentTurn{running}, stepWait, 0, ""},
		{"succeeded", nil, []twv1.AgentTurn{succeeded}, stepSucceed, 0, ""},
		{"aborted", nil, []twv1.AgentTurn{aborted}, stepAbort, 0, ""},
		{"runaway rerolls", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false)}, StepCreate, 1, ""},
		{"stalled rerolls", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassStalled, false)}, StepCreate, 1, ""},
		{"degenerate rerolls", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassDegenerate, false)}, StepCreate, 1, ""},
		{"infra retries", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassInfra, false)}, StepCreate, 1, ""},
		{"agent-error retries once", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassAgentError, false)}, StepCreate, 1, ""},
		{"agent-error twice faults", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassAgentError, false), failedTurn(1, twv1.ClassAgentError, false)},
			stepFault, 0, "no reroll left (1 of 1 used)"},
		{"overspend faults", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassOverspend, false)}, stepFault, 0, "overspend is not rerolled"},
		{"length faults", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassLength, false)}, stepFault, 0, "class length is not rerolled"},
		{"no-signal faults", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassNoSignal, false)}, stepFault, 0, "class no-signal"},
		{"second trip faults", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false), failedTurn(1, twv1.ClassRunaway, false)},
			stepFault, 0, "no reroll left (1 of 1 used)"},
		{"continue faults at once", nil, []twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, true)}, stepFault, 0, "continued conversation"},
		{"cancel wins over a reroll", func(r *twv1.AgentRun) { r.Spec.Cancel = true },
			[]twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false)}, stepAbort, 0, ""},
		{"but not over a fault", func(r *twv1.AgentRun) { r.Spec.Cancel = true },
			[]twv1.AgentTurn{failedTurn(0, twv1.ClassOverspend, false)}, stepFault, 0, "overspend"},
		{"deleted", func(r *twv1.AgentRun) { r.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
			[]twv1.AgentTurn{failedTurn(0, twv1.ClassStalled, false)}, stepAbort, 0, ""},
		{"max 2", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](2)} },
			[]twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false), failedTurn(1, twv1.ClassRunaway, false)}, StepCreate, 2, ""},
		{"max 0", func(r *twv1.AgentRun) { r.Spec.Rerolls = &twv1.RerollPolicy{Max: ptr.To[int32](0)} },
			[]twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false)}, stepFault, 0, "no reroll left (0 of 0 used)"},
		{"classes override", func(r *twv1.AgentRun) {
			r.Spec.Rerolls = &twv1.RerollPolicy{Classes: []twv1.FaultClass{twv1.ClassLength}}
		}, []twv1.AgentTurn{failedTurn(0, twv1.ClassLength, false)}, StepCreate, 1, ""},
		{"classes override drops runaway", func(r *twv1.AgentRun) {
			r.Spec.Rerolls = &twv1.RerollPolicy{Classes: []twv1.FaultClass{twv1.ClassLength}}
		}, []twv1.AgentTurn{failedTurn(0, twv1.ClassRunaway, false)}, stepFault, 0, "class runaway"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := &twv1.AgentRun{}
			if c.run != nil {
				c.run(run)
			}
			d := decide(run, c.turns, runPolicy(def, run))
			if d.Step != c.step || d.attempt != c.attempt || !strings.Contains(d.Why, c.why) || (c.why == "" && d.Why != "") {
				t.Errorf("got %s attempt %d why %q; want %s attempt %d why %q", d.Step, d.attempt, d.Why, c.step, c.attempt, c.why)
			}
		})
	}
}

// The chain reports the first objection, in order.
func TestRerollChainOrder(t *testing.T) {
	last := failedTurn(3, twv1.ClassOverspend, true)
	_, why := canReroll(&twv1.AgentRun{}, &last, shared.DefaultConfig().Rerolls)
	if !strings.Contains(why, "continued conversation") {
		t.Errorf("why %q: the continue check comes first", why)
	}
}

func TestClassOf(t *testing.T) {
	for det, want := range map[string]twv1.FaultClass{
		monitor.DetectorStepBudget: twv1.ClassRunaway, monitor.DetectorIdenticalCalls: twv1.ClassRunaway, monitor.DetectorStall: twv1.ClassStalled,
		monitor.DetectorDegeneration: twv1.ClassDegenerate, monitor.DetectorSpend: twv1.ClassOverspend, monitor.DetectorLengthStop: twv1.ClassLength,
		monitor.DetectorCycles: twv1.ClassRunaway, monitor.DetectorRepeatedErrors: twv1.ClassRunaway, monitor.DetectorRepetition: twv1.ClassDegenerate,
		"somethingNew": twv1.ClassRunaway,
	} {
		if got := shared.ClassOf(det); got != want {
			t.Errorf("classOf(%s) = %s, want %s", det, got, want)
		}
	}
}
