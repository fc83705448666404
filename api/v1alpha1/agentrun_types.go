package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Format, the agent's stdout event format, and its enum of the CLIs'
// formats are generated from the CLIs' table (pkg/agents) into
// zz_generated.format.go by hack/apitables (make generate).

// RerollPolicy says which failed turns are tried again as a fresh
// conversation. Unset fields take the cluster default (docs/design.md#fault-classes:
// one reroll, for runaway, stalled, degenerate, infra and agent-error).
// +kubebuilder:validation:XValidation:rule="!has(self.classes) || !self.classes.exists(c, c == 'overspend')",message="overspend is never rerolled: maxCostUSD caps the whole run",fieldPath=".classes"
type RerollPolicy struct {
	// Max is how many turns may follow the first one, all classes together.
	// 0 turns rerolls off.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Max *int32 `json:"max,omitempty"`

	// Classes are the fault classes that are rerolled; any other class
	// faults the run at once. overspend is never rerolled.
	// +listType=set
	// +optional
	Classes []FaultClass `json:"classes,omitempty"`
}

// AgentRunSpec is one request to an agent.
// +kubebuilder:validation:XValidation:rule="self.prompt == oldSelf.prompt",message="prompt is immutable: every turn of a run gets the identical prompt",fieldPath=".prompt"
// +kubebuilder:validation:XValidation:rule="has(self.session) == has(oldSelf.session) && (!has(self.session) || self.session == oldSelf.session)",message="session is immutable",fieldPath=".session"
// +kubebuilder:validation:XValidation:rule="(has(self.continue) && self.continue) == (has(oldSelf.continue) && oldSelf.continue)",message="continue is immutable",fieldPath=".continue"
// +kubebuilder:validation:XValidation:rule="!has(self.continue) || !self.continue || has(self.session)",message="continue needs a session: set spec.session",fieldPath=".session"
// +kubebuilder:validation:XValidation:rule="!has(self.agentContainer) || self.template.spec.containers.exists(c, c.name == self.agentContainer)",message="agentContainer must name a container of spec.template.spec.containers",fieldPath=".agentContainer"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionStore) || has(self.sessionStore.mountPath) || (has(self.format) && self.format != 'auto')",message="sessionStore.mountPath is required when format is auto: only a named format says where its CLI keeps its state",fieldPath=".sessionStore.mountPath"
// +kubebuilder:validation:XValidation:rule="has(self.drill) == has(oldSelf.drill) && (!has(self.drill) || self.drill == oldSelf.drill)",message="drill is immutable",fieldPath=".drill"
// +kubebuilder:validation:XValidation:rule="!has(self.drill) || (has(self.format) && self.format != 'auto')",message="drill needs a named format: only a named format says which model endpoint its CLI reads (docs/drill.md)",fieldPath=".format"
// +kubebuilder:validation:XValidation:rule="!has(self.model) || !has(self.model.gateway) || (has(self.format) && self.format != 'auto')",message="model.gateway needs a named format: only a named format says which model endpoint and key its CLI reads (docs/gateway.md)",fieldPath=".format"
// +kubebuilder:validation:XValidation:rule="!has(self.drill) || !has(self.model) || !has(self.model.gateway)",message="a drill's model is the scripted one: a drill takes no model.gateway",fieldPath=".model.gateway"
type AgentRunSpec struct {
	// Prompt is the task handed to the agent (env TURNWATCH_PROMPT). A reroll
	// gets the identical prompt.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=262144
	// +required
	Prompt string `json:"prompt"`

	// Format is the agent's stdout event format; auto lets the sidecar guess.
	// +kubebuilder:default=auto
	// +optional
	Format Format `json:"format,omitempty"`

	// Template is the Pod of one turn. The controller sets restartPolicy
	// Never, turns off the service-account token automount, adds the
	// turnwatch env to the agent container and injects the sidecar.
	// +kubebuilder:validation:XValidation:rule="self.spec.containers.size() > 0",message="template.spec.containers must name at least one container"
	Template corev1.PodTemplateSpec `json:"template"`

	// AgentContainer is the name of the agent container; default the first
	// container of the template.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	AgentContainer string `json:"agentContainer,omitempty"`

	// Session names a conversation that spans AgentRuns of this namespace.
	// The conversation id handed to the agent is derived from the session and
	// its epoch.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	Session string `json:"session,omitempty"`

	// Continue continues the session's current conversation instead of
	// starting a fresh one. A continued turn is never rerolled: a failure
	// faults the run and bumps the session's epoch, so that the next continue
	// starts a fresh conversation.
	// +optional
	Continue bool `json:"continue,omitempty"`

	// SessionStore keeps the agent CLI's own state (its conversations) from
	// one turn's Pod to the next, so that a continued turn resumes the CLI's
	// conversation (TURNWATCH_AGENT_SESSION_ID): the claim is mounted on the
	// agent container with one subPath per session (the session's name, or
	// the run's without one). Without it the template may mount a volume
	// itself.
	// +optional
	SessionStore *SessionStore `json:"sessionStore,omitempty"`

	// Guards override the cluster's default detector thresholds for this run.
	// +optional
	Guards *Guards `json:"guards,omitempty"`

	// Rerolls overrides the cluster's default reroll policy for this run.
	// +optional
	Rerolls *RerollPolicy `json:"rerolls,omitempty"`

	// TTLSecondsAfterFinished deletes the run (and with it its turns and
	// their stopped Pods and logs) this long after it Succeeded, Faulted or
	// was Aborted. Unset: kept until deleted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// Cancel stops the run: the live turn's agent is stopped and recorded as
	// Aborted, and no turn follows.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// Drill runs the template against the scripted model instead of a real
	// one (docs/drill.md): no tokens, no network. Immutable.
	// +optional
	Drill *Drill `json:"drill,omitempty"`

	// Model says how the agent reaches its model: through the model
	// gateway (docs/gateway.md), or, unset, as its template says unless a
	// policy gives a default gateway.
	// +optional
	Model *Model `json:"model,omitempty"`
}

// SessionStore is a PersistentVolumeClaim that keeps the agent CLI's state.
type SessionStore struct {
	// ClaimName is the PersistentVolumeClaim, in the run's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClaimName string `json:"claimName"`

	// MountPath is where the agent container sees the session's folder of
	// the claim. Default: the folder the format's CLI keeps its state in,
	// under the agent container's HOME (its env HOME in the template, else
	// /root): claude ~/.claude, codex ~/.codex, gemini ~/.gemini, opencode
	// ~/.local/share/opencode, pi ~/.pi.
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	MountPath string `json:"mountPath,omitempty"`
}

// RunPhase is where an AgentRun is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Faulted;Aborted
type RunPhase string

// Phases of an AgentRun.
const (
	RunPending   RunPhase = "Pending"
	RunRunning   RunPhase = "Running"
	RunSucceeded RunPhase = "Succeeded"
	RunFaulted   RunPhase = "Faulted"
	RunAborted   RunPhase = "Aborted"
)

// TurnRef is one turn of a run as the run's status lists it.
type TurnRef struct {
	// Name is the AgentTurn's name, <run>-<attempt>.
	Name string `json:"name"`
	// Attempt is the turn's attempt number, 0 for the first.
	Attempt int32 `json:"attempt"`
	// Outcome is the turn's outcome; empty while it runs.
	// +optional
	Outcome TurnOutcome `json:"outcome,omitempty"`
	// ErrorType is the fault class of a failed turn.
	// +optional
	ErrorType FaultClass `json:"errorType,omitempty"`
	// Steps is the turn's own tool calls, kept here so that the run's totals
	// survive the turn's deletion.
	// +optional
	Steps int64 `json:"steps,omitempty"`
	// CostUSD is the turn's own cost, a decimal string, kept here so that
	// the run's cost survives the turn's deletion.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`
	// StreamCostUSD is the cost the turn's own stream reported, a decimal
	// string, when the model gateway metered the turn (CostUSD is then the
	// metered figure); absent otherwise.
	// +optional
	StreamCostUSD string `json:"streamCostUSD,omitempty"`
}

// RunProgress is a running turn's own steps and cost, as its sidecar last
// reported them.
type RunProgress struct {
	// Turn is the reporting turn's name (its Pod's name).
	Turn string `json:"turn"`
	// RunUID is the UID of the run the reporting sidecar was started for, so
	// that a sidecar of an earlier run of the same name is told apart.
	// +optional
	RunUID string `json:"runUID,omitempty"`
	// Steps is the turn's own tool calls so far.
	Steps int64 `json:"steps"`
	// CostUSD is the turn's own cost so far, a decimal string.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`
	// Time is when the sidecar made the report.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// Lag is how far behind the agent's log the sidecar read when it made
	// the report: the time it read its last line less that line's log
	// timestamp (docs/protocol.md). The manager serves it as the metric
	// turnwatch_sidecar_lag_seconds. Absent before the first line, and
	// for a sidecar that reads a file rather than the log.
	// +optional
	Lag *metav1.Duration `json:"lag,omitempty"`
}

// AgentRunStatus is what became of the run.
type AgentRunStatus struct {
	// ObservedGeneration is the generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Running, Succeeded, Faulted or Aborted.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// Attempts is how many turns were ever created for the run, deleted
	// ones included: a high-water mark that never goes down.
	// +optional
	Attempts int32 `json:"attempts"`

	// Epoch is the session epoch of the run's latest conversation, bumped by
	// one when the run faults, so that the session's next continue starts a
	// fresh conversation. 0 without a session.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`

	// ConversationID is the conversation id of the latest turn.
	// +optional
	ConversationID string `json:"conversationID,omitempty"`

	// Steps is the tool calls of all turns.
	// +optional
	Steps int64 `json:"steps"`

	// CostUSD is the sum of the turns' own costs (deleted turns included),
	// a decimal string.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`

	// Turns lists the run's turns, oldest first, deleted ones included.
	// +listType=atomic
	// +optional
	Turns []TurnRef `json:"turns,omitempty"`

	// Progress is the running turn's latest report, written by that turn's
	// sidecar together with steps and costUSD above (the earlier turns'
	// totals plus this turn's so far), so that a report costs one API
	// write (docs/protocol.md). The admission policy
	// turnwatch-sidecar-run-progress lets a sidecar write these three fields
	// only, of its own run's current turn, never lower, never on a finished
	// run. A turn's entry in turns carries its own figures once it settles.
	// +optional
	Progress *RunProgress `json:"progress,omitempty"`

	// AnnouncedAttempt is the highest attempt whose Rerolled Event was
	// emitted, so that a reroll is announced once even when the manager
	// restarts right after creating its turn.
	// +optional
	AnnouncedAttempt int32 `json:"announcedAttempt,omitempty"`

	// Fault is the run's terminal fault, once it faulted.
	// +optional
	Fault *Fault `json:"fault,omitempty"`

	// StartTime is when the first turn was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the run reached Succeeded, Faulted or Aborted.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Drill is what a drill run's scenario expected and what happened.
	// +optional
	Drill *DrillStatus `json:"drill,omitempty"`

	// Conditions are Ready (True once the run succeeded; False with the
	// fault class as reason once it faulted or aborted) and Faulted.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AgentRun is one request to an agent: a prompt, a Pod template and guards.
// It owns its AgentTurns.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ar,categories=turnwatch
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it is a label value"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.steps`
// +kubebuilder:printcolumn:name="Cost",type=string,JSONPath=`.status.costUSD`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Drill",type=string,JSONPath=`.spec.drill.scenario`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AgentRunSpec `json:"spec"`
	// +optional
	Status AgentRunStatus `json:"status,omitempty"`
}

// AgentRunList is a list of AgentRuns.
// +kubebuilder:object:root=true
type AgentRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AgentRun{}, &AgentRunList{})
}
