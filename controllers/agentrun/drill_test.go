package agentrun

import (
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

func drillTurn(attempt int32, steps int64, err *twv1.TurnError, f func(*twv1.AgentTurnStatus)) twv1.AgentTurn {
	t := twv1.AgentTurn{}
	t.Spec.Attempt = attempt
	t.Status.Steps, t.Status.Error = steps, err
	if f != nil {
		f(&t.Status)
	}
	return t
}

func TestDrillStatus(t *testing.T) {
	loop := &twv1.TurnError{Type: twv1.ClassRunaway, Detector: "identicalCalls"}
	spend := &twv1.TurnError{Type: twv1.ClassOverspend, Detector: "spend"}
	stall := &twv1.TurnError{Type: twv1.ClassStalled, Detector: "stall"}
	refused := func(s *twv1.AgentTurnStatus) {
		s.RefusedCall, s.NudgeDelivery = "toolu_4", twv1.NudgeDelivered
		s.Drill = &twv1.TurnDrill{Requests: 4, Fresh: true}
	}
	notFresh := func(s *twv1.AgentTurnStatus) { s.Drill = &twv1.TurnDrill{Requests: 4} }
	for _, c := range []struct {
		name, format, scenario string
		phase                  twv1.RunPhase
		fault                  *twv1.Fault
		turns                  []twv1.AgentTurn
		want                   twv1.DrillResult
		check                  func(*testing.T, *twv1.DrillStatus)
	}{
		{name: "caught, refused, fresh", format: "claude", scenario: "identicalLoop", phase: twv1.RunFaulted,
			fault: &twv1.Fault{Class: twv1.ClassRunaway, Detector: "identicalCalls"},
			turns: []twv1.AgentTurn{drillTurn(0, 4, loop, refused), drillTurn(1, 4, loop, refused)}, want: twv1.DrillCaught,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.AtCall != 4 || d.CallRefused == nil || !*d.CallRefused || d.RerollFresh == nil || !*d.RerollFresh || d.NudgeDelivered == nil || !*d.NudgeDelivered {
					t.Errorf("%+v", d)
				}
			}},
		{name: "a reroll that carried the conversation", format: "pi", scenario: "identicalLoop", phase: twv1.RunFaulted,
			fault: &twv1.Fault{Class: twv1.ClassRunaway, Detector: "identicalCalls"},
			turns: []twv1.AgentTurn{drillTurn(0, 4, loop, nil), drillTurn(1, 4, loop, notFresh)}, want: twv1.DrillCaught,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.RerollFresh == nil || *d.RerollFresh || d.CallRefused == nil || *d.CallRefused {
					t.Errorf("fresh %v refused %v", d.RerollFresh, d.CallRefused)
				}
			}},
		{name: "a reroll that never asked the model", format: "opencode", scenario: "stall", phase: twv1.RunFaulted,
			fault: &twv1.Fault{Class: twv1.ClassStalled, Detector: "stall"},
			turns: []twv1.AgentTurn{drillTurn(0, 0, stall, refused), drillTurn(1, 0, stall, func(s *twv1.AgentTurnStatus) { s.Drill = &twv1.TurnDrill{} })},
			want:  twv1.DrillCaught,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.RerollFresh != nil {
					t.Errorf("fresh %v, want unknown", *d.RerollFresh)
				}
			}},
		{name: "another guard first", format: "claude", scenario: "lengthStop", phase: twv1.RunFaulted,
			fault: &twv1.Fault{Class: twv1.ClassOverspend, Detector: "spend"},
			turns: []twv1.AgentTurn{drillTurn(0, 0, spend, nil)}, want: twv1.DrillCaughtOtherwise,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.Expected.Class != twv1.ClassAgentError || d.Note == "" || d.CallRefused != nil {
					t.Errorf("expected %+v note %q refused %v", d.Expected, d.Note, d.CallRefused)
				}
			}},
		{name: "missed", format: "claude", scenario: "identicalLoop", phase: twv1.RunSucceeded,
			turns: []twv1.AgentTurn{drillTurn(0, 8, nil, nil)}, want: twv1.DrillMissed},
		{name: "healthy", format: "gemini", scenario: "healthy", phase: twv1.RunSucceeded,
			turns: []twv1.AgentTurn{drillTurn(0, 1, nil, nil)}, want: twv1.DrillAsExpected},
		{name: "false alarm", format: "gemini", scenario: "healthy", phase: twv1.RunFaulted,
			fault: &twv1.Fault{Class: twv1.ClassRunaway, Detector: "identicalCalls"},
			turns: []twv1.AgentTurn{drillTurn(0, 1, loop, nil)}, want: twv1.DrillFalseAlarm},
		// codex's stream hides the deltas; the drill's gateway reads them.
		{name: "what the stream hides", format: "codex", scenario: "whitespace", phase: twv1.RunSucceeded,
			turns: []twv1.AgentTurn{drillTurn(0, 0, nil, nil)}, want: twv1.DrillMissed,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.Expected != (twv1.DrillVerdict{Class: twv1.ClassDegenerate, Detector: "degeneration"}) || d.Note != "" {
					t.Errorf("expected %+v note %q", d.Expected, d.Note)
				}
			}},
		{name: "nudged", format: "opencode", scenario: "silentRun", phase: twv1.RunSucceeded,
			turns: []twv1.AgentTurn{drillTurn(0, 16, nil, func(s *twv1.AgentTurnStatus) { s.Nudges, s.NudgeDelivery = 1, twv1.NudgeNotDelivered })},
			want:  twv1.DrillCaught,
			check: func(t *testing.T, d *twv1.DrillStatus) {
				if d.NudgeDelivered == nil || *d.NudgeDelivered || d.Got.Detector != "silentRun" {
					t.Errorf("delivered %v got %+v", d.NudgeDelivered, d.Got)
				}
			}},
		{name: "never nudged", format: "opencode", scenario: "silentRun", phase: twv1.RunSucceeded,
			turns: []twv1.AgentTurn{drillTurn(0, 16, nil, nil)}, want: twv1.DrillMissed},
		{name: "cancelled", format: "claude", scenario: "stall", phase: twv1.RunAborted, want: twv1.DrillMissed},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := newRun("ns", "r", func(r *twv1.AgentRun) {
				r.Spec.Format, r.Spec.Drill = twv1.Format(c.format), &twv1.Drill{Scenario: c.scenario}
			})
			if d := drillStatus(run, c.turns, c.phase, c.fault, false); d.Result != twv1.DrillPending {
				t.Errorf("not final, yet %s", d.Result)
			}
			d := drillStatus(run, c.turns, c.phase, c.fault, true)
			if d.Result != c.want {
				t.Errorf("result %s, want %s (%+v)", d.Result, c.want, d)
			}
			if c.check != nil {
				c.check(t, d)
			}
		})
	}
}
