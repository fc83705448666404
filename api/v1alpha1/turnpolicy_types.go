package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Enforcement says what a detector's trip does (docs/policies.md#audit).
// +kubebuilder:validation:Enum=enforce;audit
type Enforcement string

// Enforcement modes.
const (
	// EnforcementEnforce: a trip stops the turn (the default).
	EnforcementEnforce Enforcement = "enforce"
	// EnforcementAudit: a trip is recorded as a would-trip (a WouldTrip
	// Event, the turn's status.wouldTrip, metric label mode="audit") and
	// the turn goes on.
	EnforcementAudit Enforcement = "audit"
)

// Guards, GuardLimits and DetectorPolicies, which hold one field or key
// per guard or detector, are generated from the detector table
// (zz_generated.guards.go, by hack/apitables: `make generate`).

// DetectorPolicy is one detector's setting in a policy.
type DetectorPolicy struct {
	// Enforcement overrides the policy's spec.enforcement for this
	// detector.
	// +required
	Enforcement Enforcement `json:"enforcement"`
}

// Budget is a spend budget over a rolling window, for all the runs a policy
// applies to together (docs/policies.md#budgets).
type Budget struct {
	// MaxCostUSD is the most the runs may spend in one window, a decimal
	// string such as "100".
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,9})?$`
	// +required
	MaxCostUSD string `json:"maxCostUSD"`

	// Window is the budget's period in Go duration syntax ("24h"), at least
	// "1m". A window starts when the last one ends; the first starts when
	// the policy is first seen.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="window must be at least 1m"
	// +required
	Window string `json:"window"`
}

// PodSecurityLevel is a Pod Security Standard a turn's Pod meets
// (docs/policies.md#pod-security).
// +kubebuilder:validation:Enum=baseline;restricted
type PodSecurityLevel string

// Pod Security levels.
const (
	// PodSecurityBaseline: the Pod Security Standard baseline, which every
	// turn's Pod meets whatever its policies say.
	PodSecurityBaseline PodSecurityLevel = "baseline"
	// PodSecurityRestricted: the Pod Security Standard restricted.
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// TurnPolicySpec is what a policy sets for the runs it applies to.
type TurnPolicySpec struct {
	// Guards are the defaults of the runs the policy applies to: a run's
	// own spec.guards win over them, and they win over a
	// ClusterTurnPolicy's and the manager's defaults.
	// +optional
	Guards *Guards `json:"guards,omitempty"`

	// Limits are the most a run may ask; a run over one is refused at
	// apply by the admission policy turnwatch-agentrun-limits, and a
	// default over one is capped to it.
	// +optional
	Limits *GuardLimits `json:"limits,omitempty"`

	// Enforcement is enforce (a trip stops the turn) or audit (a trip is
	// recorded and the turn goes on). Unset: the level below decides (a
	// ClusterTurnPolicy's, else enforce), so a namespace's policy that only
	// sets limits leaves a cluster policy's audit in place.
	// +optional
	Enforcement Enforcement `json:"enforcement,omitempty"`

	// Detectors set one detector's enforcement over spec.enforcement, by
	// the detector's name.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Detectors DetectorPolicies `json:"detectors,omitempty"`

	// Budget caps what the runs the policy applies to spend together in a
	// window. Drill runs count like any run and are held like any.
	// +optional
	Budget *Budget `json:"budget,omitempty"`

	// PodSecurity is the Pod Security Standard the turn Pods of the runs
	// the policy applies to meet: baseline (unset: baseline, which every
	// turn's Pod meets whatever its policies say) or restricted. A run
	// whose template would not meet it is refused at apply, naming the
	// field, by the admission policy turnwatch-agentrun-pod-security (or
	// turnwatch-agentrun-cluster-pod-security), and the controller renders
	// no Pod for it. The strictest level of the policies that apply holds.
	// +optional
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// Model is the default model gateway of the runs the policy applies
	// to, and whether they must use one (docs/gateway.md).
	// +optional
	Model *ModelPolicy `json:"model,omitempty"`
}

// ClusterTurnPolicySpec is a TurnPolicySpec for the namespaces a selector
// matches.
type ClusterTurnPolicySpec struct {
	// NamespaceSelector picks the namespaces the policy applies to; unset or
	// empty: every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	TurnPolicySpec `json:",inline"`
}

// BudgetStatus is a budget's ledger (docs/policies.md#the-ledger).
type BudgetStatus struct {
	// WindowStart is when the current window began.
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`

	// SpentUSD is the window's spend: SettledUSD plus the running turns'
	// cost so far, as last written.
	// +optional
	SpentUSD string `json:"spentUSD,omitempty"`

	// SettledUSD is the cost of the turns counted in this window: each
	// settled turn once.
	// +optional
	SettledUSD string `json:"settledUSD,omitempty"`

	// Turns is how many settled turns were counted in this window.
	// +optional
	Turns int64 `json:"turns,omitempty"`

	// Counting are the turns counted whose budget finalizer is not yet
	// removed: a turn is counted only while it holds the finalizer and is
	// not listed here, so it is counted once (docs/policies.md#the-ledger).
	// +listType=map
	// +listMapKey=uid
	// +optional
	Counting []CountedTurn `json:"counting,omitempty"`
}

// CountedTurn is a turn the ledger counted.
type CountedTurn struct {
	// UID is the AgentTurn's UID.
	UID types.UID `json:"uid"`
	// Name is the AgentTurn's namespace/name.
	Name string `json:"name"`
	// CostUSD is what was counted, a decimal string.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`
}

// TurnPolicyStatus is what the controller observed of a policy.
type TurnPolicyStatus struct {
	// ObservedGeneration is the generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Budget is the ledger of spec.budget.
	// +optional
	Budget *BudgetStatus `json:"budget,omitempty"`

	// Conditions are BudgetExhausted (True while the window's spend is past
	// spec.budget.maxCostUSD) and Overlapping (True when another policy
	// applies to the same runs, naming whose guards win).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Policy condition types and reasons.
const (
	// PolicyConditionBudgetExhausted is True while the policy's budget is
	// spent; an AgentRun kept Pending by it carries a condition of the same
	// type naming the policy.
	PolicyConditionBudgetExhausted = "BudgetExhausted"
	// PolicyConditionOverlapping is True when another policy of the same
	// kind applies to some of the same runs.
	PolicyConditionOverlapping = "Overlapping"
)

// TurnPolicy sets the guard defaults, limits, enforcement and spend budget
// of the runs of its namespace (docs/policies.md).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tp,categories=turnwatch
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budget.maxCostUSD`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.budget.window`
// +kubebuilder:printcolumn:name="Spent",type=string,JSONPath=`.status.budget.spentUSD`
// +kubebuilder:printcolumn:name="Exhausted",type=string,JSONPath=`.status.conditions[?(@.type=="BudgetExhausted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TurnPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TurnPolicySpec `json:"spec,omitempty"`
	// +optional
	Status TurnPolicyStatus `json:"status,omitempty"`
}

// TurnPolicyList is a list of TurnPolicies.
// +kubebuilder:object:root=true
type TurnPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TurnPolicy `json:"items"`
}

// ClusterTurnPolicy is a TurnPolicy for the namespaces its selector
// matches; a namespace's own TurnPolicy wins over it (docs/policies.md).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ctp,categories=turnwatch
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budget.maxCostUSD`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.budget.window`
// +kubebuilder:printcolumn:name="Spent",type=string,JSONPath=`.status.budget.spentUSD`
// +kubebuilder:printcolumn:name="Exhausted",type=string,JSONPath=`.status.conditions[?(@.type=="BudgetExhausted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterTurnPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ClusterTurnPolicySpec `json:"spec,omitempty"`
	// +optional
	Status TurnPolicyStatus `json:"status,omitempty"`
}

// ClusterTurnPolicyList is a list of ClusterTurnPolicies.
// +kubebuilder:object:root=true
type ClusterTurnPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTurnPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TurnPolicy{}, &TurnPolicyList{}, &ClusterTurnPolicy{}, &ClusterTurnPolicyList{})
}
