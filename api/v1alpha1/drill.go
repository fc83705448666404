package v1alpha1

// Drill, whose enum lists the scripted model's scenarios, is generated from
// them (zz_generated.drill.go, by hack/apitables: `make generate`).

// DrillResult is how a drill ended, against what its scenario expected.
// +kubebuilder:validation:Enum=Pending;Caught;CaughtOtherwise;Missed;AsExpected;FalseAlarm
type DrillResult string

// Drill results (docs/drill.md#results). Missed and FalseAlarm fail a drill.
const (
	// DrillPending: the run has not ended.
	DrillPending DrillResult = "Pending"
	// DrillCaught: the run faulted with the expected class and detector.
	DrillCaught DrillResult = "Caught"
	// DrillCaughtOtherwise: the run faulted, but not as expected (another
	// guard, or the CLI's own, ended it first).
	DrillCaughtOtherwise DrillResult = "CaughtOtherwise"
	// DrillMissed: a scenario that should fault ended otherwise.
	DrillMissed DrillResult = "Missed"
	// DrillAsExpected: a scenario that should not fault (healthy, or one
	// the CLI's stream is blind to) succeeded.
	DrillAsExpected DrillResult = "AsExpected"
	// DrillFalseAlarm: a scenario that should not fault faulted.
	DrillFalseAlarm DrillResult = "FalseAlarm"
)

// Failed says whether r fails the drill.
func (r DrillResult) Failed() bool { return r == DrillMissed || r == DrillFalseAlarm }

// DrillVerdict is a fault's class and detector; both empty for a success.
type DrillVerdict struct {
	// Class is the fault class.
	// +optional
	Class FaultClass `json:"class,omitempty"`
	// Detector is the detector that tripped, if one did.
	// +optional
	Detector string `json:"detector,omitempty"`
}

// String is the verdict as the drill's table, its Event and explain's
// header say it: detector/class, the one of them that is set (agent-error
// has no detector, a nudge no class), or "none".
func (v DrillVerdict) String() string {
	switch {
	case v.Detector != "" && v.Class != "":
		return v.Detector + "/" + string(v.Class)
	case v.Detector != "":
		return v.Detector
	case v.Class != "":
		return string(v.Class)
	}
	return "none"
}

// DrillStatus is what a drill's scenario expected and what happened.
type DrillStatus struct {
	// Scenario is the scenario played.
	Scenario string `json:"scenario"`
	// Expected is the verdict the scenario should get from the run's CLI:
	// the scenario's detector and class; agent-error where the CLI's own
	// guard ends it first; none where the CLI's stream is blind to it.
	// +optional
	Expected DrillVerdict `json:"expected"`
	// Note says why Expected is not the scenario's own verdict.
	// +optional
	Note string `json:"note,omitempty"`
	// Guards are the guards the scenario set over the run's, so that its
	// detector is on and the drill is short (docs/drill.md#scenarios).
	// +optional
	Guards string `json:"guards,omitempty"`
	// Result is how the drill ended against Expected.
	// +optional
	Result DrillResult `json:"result,omitempty"`
	// Got is the run's verdict: its fault's class and detector; for a
	// scenario that expects a nudge (silentRun), the nudging detector once
	// the run was nudged.
	// +optional
	Got DrillVerdict `json:"got"`
	// AtCall is the tool call (the turn's step count) at which the first
	// faulted turn was stopped; 0 when none was.
	// +optional
	AtCall int64 `json:"atCall,omitempty"`
	// NudgeDelivered says whether the turns' nudges (and warnings) reached
	// the agent; unset when no nudge was given.
	// +optional
	NudgeDelivered *bool `json:"nudgeDelivered,omitempty"`
	// CallRefused says whether the tripping call was refused before it ran;
	// unset when no turn tripped at a tool call.
	// +optional
	CallRefused *bool `json:"callRefused,omitempty"`
	// RerollFresh says whether the reroll's first model request carried
	// no earlier messages; unset when the run was not rerolled, or its
	// reroll never asked the model.
	// +optional
	RerollFresh *bool `json:"rerollFresh,omitempty"`
}
