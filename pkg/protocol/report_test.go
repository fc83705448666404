package protocol

import (
	"reflect"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TestConditionWire pins what each encoder writes: docs/protocol.md
// documents these bytes and older sidecars wrote them.
func TestConditionWire(t *testing.T) {
	p := Progress{Steps: 3, Cost: monitor.Money(0)}
	cases := []struct {
		got  Condition
		want Condition
	}{
		{TripCondition("identicalCalls", "repeated"), Condition{"turnwatch.dev/Tripped", "IdenticalCalls", "repeated"}},
		{NudgeCondition(2, "silentRun", "hi"), Condition{"turnwatch.dev/Silent", "SilentRun", "streak 2: hi"}},
		{ProgressCondition(p), Condition{"turnwatch.dev/Progress", "Running", `{"steps":3,"costUSD":"0.00"}`}},
		{FinishedCondition(Summary{Progress: p}), Condition{"turnwatch.dev/Finished", "NoResult",
			`{"steps":3,"costUSD":"0.00","stopReason":"","result":false,"lines":0,"unparsed":0,"complete":false}`}},
		{ResultCondition(Summary{Result: true}), Condition{"turnwatch.dev/Result", "Result",
			`{"steps":0,"costUSD":"0.00","stopReason":"","result":true,"lines":0,"unparsed":0,"complete":false}`}},
		{DrillCondition(DrillReport{Scenario: "s", Requests: 1}), Condition{"turnwatch.dev/Drill", "Served", `{"scenario":"s","requests":1,"fresh":false}`}},
		{RefusedCondition("call-1"), Condition{"turnwatch.dev/CallRefused", "CallRefused", "call-1"}},
		{WouldTripCondition(nil), Condition{"turnwatch.dev/WouldTrip", "WouldTrip", "null"}},
		{WarningCondition(Warnings[0], "m"), Condition{"turnwatch.dev/DeltasHidden", "DeltasHidden", "m"}},
		{FailedCondition(ReasonLogForbidden, "403"), Condition{"turnwatch.dev/Failed", "LogForbidden", "403"}},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %+v, want %+v", i, c.got, c.want)
		}
	}
}

// TestRead reads back what the encoders write, and what older sidecars
// wrote: a Result condition in prose, a Silent one without a streak.
func TestRead(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sum := Summary{Progress: Progress{Steps: 7}, Result: true, AgentSessionID: "s1", Complete: true}
	on := func(c Condition) PodCondition { return PodCondition{Condition: c, True: true, Since: at} }
	rep := Read([]PodCondition{
		on(ProgressCondition(Progress{Steps: 5})),
		on(FinishedCondition(sum)),
		on(Condition{Type: ConditionResult, Reason: ReasonResult, Message: "the agent printed its result"}),
		on(TripCondition("identicalCalls", "line\nbreak\x1b")),
		on(Condition{Type: ConditionSilent, Reason: "SilentRun", Message: "old nudge"}),
		on(RefusedCondition("")),
		on(WarningCondition(Warnings[1], "no hooks")),
		{Condition: WarningCondition(Warnings[2], "off"), True: false},
		on(FailedCondition(ReasonPodNotFound, "gone")),
		on(DrillCondition(DrillReport{Scenario: "x", Requests: 2})),
		on(WouldTripCondition([]WouldTrip{{WouldTrip: monitor.WouldTrip{Detector: "d", Count: 2, Message: "m\x07"}}})),
	})
	if !rep.Started || !rep.FinishedSeen || rep.FinishedAt != at || rep.ResultAt != at {
		t.Errorf("flags: %+v", rep)
	}
	if rep.Counts == nil || rep.Counts.Steps != 7 || rep.Progress == nil || rep.Progress.Steps != 5 {
		t.Errorf("counts %v progress %v", rep.Counts, rep.Progress)
	}
	if !reflect.DeepEqual(*rep.Finished, sum) || !reflect.DeepEqual(*rep.Result, Summary{Result: true}) {
		t.Errorf("finished %+v result %+v", rep.Finished, rep.Result)
	}
	if *rep.Trip != (Trip{"identicalCalls", `line\nbreak\x1b`}) || rep.Nudge != "old nudge" || NudgeStreak(rep.Nudge) != 1 {
		t.Errorf("trip %+v nudge %q", rep.Trip, rep.Nudge)
	}
	if rep.RefusedCall != "?" || *rep.Failure != (Failure{ReasonPodNotFound, "gone"}) || rep.Drill.Requests != 2 {
		t.Errorf("refused %q failure %+v drill %+v", rep.RefusedCall, rep.Failure, rep.Drill)
	}
	if !reflect.DeepEqual(rep.Warnings, map[string]string{ReasonHooksNotRun: "no hooks"}) {
		t.Errorf("warnings %v", rep.Warnings)
	}
	if len(rep.WouldTrips) != 1 || rep.WouldTrips[0].Message != `m\a` {
		t.Errorf("would-trips %+v", rep.WouldTrips)
	}
}

// TestReadFinishedNotTrue: a Finished condition that is not True counts
// its steps and cost, and decides nothing.
func TestReadFinishedNotTrue(t *testing.T) {
	c := FinishedCondition(Summary{Progress: Progress{Steps: 4}})
	rep := Read([]PodCondition{{Condition: c}})
	if rep.Finished != nil || !rep.FinishedSeen || rep.Counts == nil || rep.Counts.Steps != 4 {
		t.Errorf("%+v", rep)
	}
}
