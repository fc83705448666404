package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TurnOutcome is how a turn ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Aborted
type TurnOutcome string

// Outcomes of an AgentTurn.
const (
	// TurnSucceeded: the turn finished by itself with a final result.
	TurnSucceeded TurnOutcome = "Succeeded"
	// TurnFailed: a detector tripped, or the agent or its Pod broke.
	TurnFailed TurnOutcome = "Failed"
	// TurnAborted: the user deleted or cancelled the run.
	TurnAborted TurnOutcome = "Aborted"
)

// AgentTurnSpec is one attempt of an AgentRun, or the record of an
// attached Pod (PodRef, docs/attach.md). The controller creates it; the
// admission policy turnwatch-agentturn-manager refuses a turn anyone else
// writes.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an AgentTurn's spec is immutable"
type AgentTurnSpec struct {
	// RunName is the owning AgentRun's name; empty for an attached Pod's
	// turn (PodRef).
	// +optional
	RunName string `json:"runName,omitempty"`
	// PodRef is the attached Pod this turn records: a Pod that its own
	// launcher (a Job, a CronJob, a Sandbox, a user) created with the label
	// turnwatch.dev/watch in a namespace labelled turnwatch.dev/attach, and
	// the admission policy turnwatch-attach injected the sidecar into
	// (docs/attach.md). Such a turn has no run.
	// +optional
	PodRef *AttachedPod `json:"podRef,omitempty"`
	// Attempt is 0 for the first turn, 1 for the first reroll...
	// +kubebuilder:validation:Minimum=0
	Attempt int32 `json:"attempt"`
	// Prompt is the run's prompt, identical on every attempt.
	Prompt string `json:"prompt"`
	// ConversationID is the conversation the agent starts or continues
	// (env TURNWATCH_CONVERSATION_ID), a UUID derived from the session and
	// epoch, or from the run's UID and attempt when there is no session.
	ConversationID string `json:"conversationID"`
	// Continue tells the agent to continue the conversation.
	// +optional
	Continue bool `json:"continue,omitempty"`
	// AgentSessionID is the agent CLI's own session id this turn resumes
	// (env TURNWATCH_AGENT_SESSION_ID): the status.agentSessionID of the
	// session's last turn in this conversation; set only when Continue is.
	// +optional
	AgentSessionID string `json:"agentSessionID,omitempty"`
	// Epoch is the session epoch of this turn's conversation.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// PriorCostUSD is what the run's earlier turns cost, counted against
	// guards.maxCostUSD.
	// +optional
	PriorCostUSD string `json:"priorCostUSD,omitempty"`
	// PriorSteps is the run's earlier turns' steps: the sidecar adds its
	// own turn's to it when it reports the run's progress.
	// +optional
	PriorSteps int64 `json:"priorSteps,omitempty"`
	// Guards are the turn's effective guards, each with the policy, run or
	// default that set it (docs/policies.md#precedence). Empty on a turn
	// created before policies: its Pod gets the run's guards over the
	// manager's defaults.
	// +listType=map
	// +listMapKey=name
	// +optional
	Guards []GuardSetting `json:"guards,omitempty"`
	// Audit are the detectors whose trips this turn only records
	// (enforcement audit), each with the policy that said so.
	// +listType=map
	// +listMapKey=detector
	// +optional
	Audit []AuditedDetector `json:"audit,omitempty"`
}

// AttachedPod is the Pod an attached turn records.
type AttachedPod struct {
	// Name is the Pod's name.
	Name string `json:"name"`
	// UID is the Pod's UID: a later Pod of the same name is another turn.
	UID string `json:"uid"`
	// Format is the Pod's turnwatch.dev/watch label: the agent's stream
	// format, or auto.
	Format Format `json:"format"`
	// AgentContainer is the container whose stdout the sidecar follows: the
	// Pod's turnwatch.dev/agent-container label, or its first container.
	AgentContainer string `json:"agentContainer"`
	// Owner is the Pod's controller ("Job/NAME", "Sandbox/NAME"), which
	// decides what follows a failed Pod; empty for a Pod no one controls.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// GuardSetting is one effective guard of a turn and where its value came
// from.
type GuardSetting struct {
	// Name is the guard's name (docs/design.md#thresholds-and-guards).
	Name string `json:"name"`
	// Value is the guard's value as JSON: 256, "10m", true, ["run_tests"].
	Value string `json:"value"`
	// Source is what set the value: "default" (the manager's config),
	// "ClusterTurnPolicy/NAME", "TurnPolicy/NAME", "AgentRun", "drill", or
	// "limit of TurnPolicy/NAME" (or of a ClusterTurnPolicy) when a limit
	// capped the value asked.
	Source string `json:"source"`
}

// AuditedDetector is a detector whose trips a turn only records.
type AuditedDetector struct {
	// Detector is the detector's name.
	Detector string `json:"detector"`
	// Source is the policy that set its enforcement to audit:
	// "ClusterTurnPolicy/NAME" or "TurnPolicy/NAME".
	Source string `json:"source"`
}

// WouldTrip is what an audited detector would have stopped (docs/policies.md#audit).
type WouldTrip struct {
	// Detector is the detector that would have tripped.
	Detector string `json:"detector"`
	// Class is the fault class the trip would have raised.
	// +optional
	Class FaultClass `json:"class,omitempty"`
	// Count is how many times it would have tripped in this turn.
	Count int32 `json:"count"`
	// Message is the legible text of the first would-trip.
	// +optional
	Message string `json:"message,omitempty"`
	// Step is the tool call count at the first would-trip.
	// +optional
	Step int64 `json:"step,omitempty"`
	// Time is when the first would-trip was reported.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// AgentTurnStatus is what became of the turn.
type AgentTurnStatus struct {
	// Outcome is Succeeded, Failed or Aborted; empty while the turn runs.
	// +optional
	Outcome TurnOutcome `json:"outcome,omitempty"`
	// Error says why a Failed turn failed.
	// +optional
	Error *TurnError `json:"error,omitempty"`
	// Steps is the tool calls the turn started, as the sidecar counted them.
	// +optional
	Steps int64 `json:"steps"`
	// CostUSD is the turn's cost, a decimal string: with the model gateway
	// (docs/gateway.md), the cost metered from the provider's own usage
	// figures; without it, the cost the agent's stream reported. Budgets
	// and guards.maxCostUSD count it.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`
	// StreamCostUSD is the cost the agent's own stream reported, a decimal
	// string, kept beside the metered costUSD when the model gateway
	// metered the turn; absent otherwise. A disagreement beyond rounding is
	// a CostMismatch Warning.
	// +optional
	StreamCostUSD string `json:"streamCostUSD,omitempty"`
	// AgentSessionID is the agent CLI's own session id, as its stream named
	// it (claude and gemini session_id, codex thread_id, opencode sessionID,
	// pi's session header id): what a later continue of the session resumes.
	// +optional
	AgentSessionID string `json:"agentSessionID,omitempty"`
	// PodName is the turn's Pod.
	// +optional
	PodName string `json:"podName,omitempty"`
	// Nudges is how many silent-run nudge streaks of this turn the
	// controller saw (and told, one Nudged Event each).
	// +optional
	Nudges int32 `json:"nudges,omitempty"`
	// RefusedCall is the tool call the agent's pre-tool hook refused
	// because the sidecar judged it a trip (its id, or "?"), as the sidecar
	// reported it (docs/nudges.md#refusing-the-tripping-call).
	// +optional
	RefusedCall string `json:"refusedCall,omitempty"`
	// NudgeDelivery is what the sidecar last said of a nudge's delivery to
	// the agent: Delivered or NotDelivered; empty when none was told.
	// +optional
	NudgeDelivery NudgeDelivery `json:"nudgeDelivery,omitempty"`
	// Drill is what a drill turn's scripted model served (docs/drill.md).
	// +optional
	Drill *TurnDrill `json:"drill,omitempty"`
	// WouldTrip are the trips of audited detectors: recorded, and the turn
	// went on; one entry per detector.
	// +listType=map
	// +listMapKey=detector
	// +optional
	WouldTrip []WouldTrip `json:"wouldTrip,omitempty"`
	// StartTime is when the Pod was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the outcome was recorded.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions are what the controller observed of the turn beside its
	// outcome: DeltasHidden, when the agent's stream hides the model's
	// deltas, naming the detectors that cannot see and the flag that fixes
	// it; HooksNotRun; CostMismatch, when a cost report was not taken as it
	// stood; FormatMismatch, when the stream did not read as its format.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NudgeDelivery says whether a nudge reached the agent.
// +kubebuilder:validation:Enum=Delivered;NotDelivered
type NudgeDelivery string

// Nudge deliveries.
const (
	NudgeDelivered    NudgeDelivery = "Delivered"
	NudgeNotDelivered NudgeDelivery = "NotDelivered"
)

// TurnDrill is what a drill turn's scripted model served its agent, as the
// sidecar reported it.
type TurnDrill struct {
	// Requests counts the main conversation's requests the model answered.
	// +optional
	Requests int32 `json:"requests"`
	// SideRequests counts the others (titles, summaries, a CLI's checks).
	// +optional
	SideRequests int32 `json:"sideRequests,omitempty"`
	// Fresh is true when the turn's first main request carried its prompt
	// alone: no earlier turn's messages.
	// +optional
	Fresh bool `json:"fresh"`
}

// TurnConditionDeltasHidden is the AgentTurn condition set once the agent's
// stream showed it hides the model's deltas (docs/protocol.md): degeneration,
// repetition and a stall inside a message cannot be seen.
const TurnConditionDeltasHidden = "DeltasHidden"

// TurnConditionHooksNotRun is the AgentTurn condition set when a turn that
// delivers nudges ran tool calls and no turnwatch hook ever ran
// (docs/nudges.md): its nudges could not reach the model.
const TurnConditionHooksNotRun = "HooksNotRun"

// TurnConditionLogRotated is the AgentTurn condition set when the turn's
// sidecar lagged past a rotation of the agent's log (docs/protocol.md): lines
// may have been rotated away unread.
const TurnConditionLogRotated = "LogRotated"

// TurnConditionCostMismatch is the AgentTurn condition set when the turn
// did not take a cost report as it stood (docs/design.md#a-cost-never-goes-down):
// one below what was counted already (the turn keeps the higher figure),
// or one no model could produce (not counted).
const TurnConditionCostMismatch = "CostMismatch"

// TurnConditionForgeable is the condition of an attached Pod's turn
// (docs/attach.md#forgeable) whose agent holds a credential that could
// write its own verdict: a container besides the sidecar mounts a service
// account token. Its message names the container and the volume.
const TurnConditionForgeable = "Forgeable"

// TurnConditionFormatMismatch is the AgentTurn condition set when most of
// the agent's stream did not read as the run's format
// (docs/design.md#format-mismatch): the detectors could not see it. Its
// message names the format the stream reads as.
const TurnConditionFormatMismatch = "FormatMismatch"

// AgentTurn is one attempt of an AgentRun: one Pod, one conversation.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=at,categories=turnwatch
// +kubebuilder:printcolumn:name="Run",type=string,JSONPath=`.spec.runName`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.podRef.name`,priority=1
// +kubebuilder:printcolumn:name="Attempt",type=integer,JSONPath=`.spec.attempt`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.outcome`
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.error.type`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.steps`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentTurn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AgentTurnSpec `json:"spec"`
	// +optional
	Status AgentTurnStatus `json:"status,omitempty"`
}

// AgentTurnList is a list of AgentTurns.
// +kubebuilder:object:root=true
type AgentTurnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentTurn `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AgentTurn{}, &AgentTurnList{})
}
