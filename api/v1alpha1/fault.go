package v1alpha1

// FaultClass is the type of a failed turn (AgentTurn status.error.type) and of
// a run's terminal fault. See docs/design.md#fault-classes.
// +kubebuilder:validation:Enum=runaway;stalled;degenerate;overspend;length;no-signal;infra;agent-error
type FaultClass string

const (
	// ClassRunaway: the step budget, identical calls, cycles or repeated
	// errors tripped (or a detector the controller does not know).
	ClassRunaway FaultClass = "runaway"
	// ClassStalled: no event for longer than the stall or tool timeout.
	ClassStalled FaultClass = "stalled"
	// ClassDegenerate: the model streamed whitespace only (degeneration) or
	// one pattern over and over (repetition).
	ClassDegenerate FaultClass = "degenerate"
	// ClassOverspend: the run's cost passed guards.maxCostUSD.
	ClassOverspend FaultClass = "overspend"
	// ClassLength: the last model message stopped at the output-length limit.
	ClassLength FaultClass = "length"
	// ClassNoSignal: the agent exited without a final result event.
	ClassNoSignal FaultClass = "no-signal"
	// ClassInfra: the Pod or a container broke (image pull, eviction, OOM,
	// non-zero exit without a result).
	ClassInfra FaultClass = "infra"
	// ClassAgentError: the agent's own final result reported an error (an
	// API error, the CLI's own turn limit); the message is the CLI's text.
	ClassAgentError FaultClass = "agent-error"
)

// TurnError is why a turn failed.
type TurnError struct {
	// Type is the fault class.
	Type FaultClass `json:"type"`
	// Detector is the detector that tripped (stepBudget, identicalCalls,
	// stall, degeneration, spend, lengthStop, cycles, repeatedErrors,
	// repetition); empty for no-signal, infra and agent-error.
	// +optional
	Detector string `json:"detector,omitempty"`
	// Message is the legible text ("repeated an identical tool call 4 times").
	// +optional
	Message string `json:"message,omitempty"`
}

// Fault is an AgentRun's terminal fault: the error of its last turn.
type Fault struct {
	// Class is the fault class.
	Class FaultClass `json:"class"`
	// Detector is the detector that tripped, if one did.
	// +optional
	Detector string `json:"detector,omitempty"`
	// Message is the legible text.
	// +optional
	Message string `json:"message,omitempty"`
	// Turn is the name of the AgentTurn that faulted; its Pod is kept, stopped,
	// with its logs.
	Turn string `json:"turn"`
}
