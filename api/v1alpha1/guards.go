package v1alpha1

// Guards are the detectors' thresholds. In an AgentRun every field is an
// optional override of the cluster defaults (the manager's config file); the
// merged, complete set is handed to the sidecar as JSON with these names.
// A count of 0 switches that detector off.
type Guards struct {
	// StepBudget is the most tool calls one turn may start; the next one
	// trips stepBudget (class runaway). Cluster default 256.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StepBudget *int32 `json:"stepBudget,omitempty"`

	// IdenticalCalls is how many consecutive byte-identical tool calls trip
	// identicalCalls (class runaway). Cluster default 4.
	// +kubebuilder:validation:Minimum=0
	// +optional
	IdenticalCalls *int32 `json:"identicalCalls,omitempty"`

	// SilentTurns is how many tool-only model messages in a row are allowed
	// before the silent-run nudge (an Event, not a stop). Cluster default 12.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SilentTurns *int32 `json:"silentTurns,omitempty"`

	// StallTimeout is the longest silence while the model is generating, in
	// Go duration syntax ("10m"); longer trips stall (class stalled).
	// Cluster default "10m". "0s" switches it off. At most 4 numbers of at
	// most 5 digits before the point, each with its unit ("1h30m"), so that
	// every value admitted is one the admission policies can read.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	StallTimeout *string `json:"stallTimeout,omitempty"`

	// ToolTimeout is the longest silence while a tool call is outstanding,
	// in Go duration syntax ("30m"), as StallTimeout. Cluster default "30m".
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	ToolTimeout *string `json:"toolTimeout,omitempty"`

	// WhitespaceDeltas is how many consecutive whitespace-only text or
	// thinking deltas trip degeneration (class degenerate). Cluster default 128.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WhitespaceDeltas *int32 `json:"whitespaceDeltas,omitempty"`

	// WhitespaceBytes is how many bytes of consecutive whitespace-only deltas
	// trip degeneration. Cluster default 8192.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WhitespaceBytes *int32 `json:"whitespaceBytes,omitempty"`

	// WorldTools are tools whose answer means "the world moved" (run_tests):
	// their answer resets the identical-call streak.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	WorldTools []string `json:"worldTools,omitempty"`

	// MaxCostUSD is the spend cap for the whole run (all its turns), a
	// decimal string such as "5.00". Cost strictly above it trips spend
	// (class overspend). Unset: no cap.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,9})?$`
	// +optional
	MaxCostUSD *string `json:"maxCostUSD,omitempty"`

	// CycleRepeats is how many times in a row a sequence of 2 to 5 tool calls
	// (not all the same) may repeat before cycles trips (class runaway):
	// A B A B A B A B is a cycle of 2 repeated 4 times. Cluster default 0
	// (off): run calibrate over healthy streams before switching it on.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 2",message="cycleRepeats must be 0 (off) or at least 2"
	// +optional
	CycleRepeats *int32 `json:"cycleRepeats,omitempty"`

	// ErrorRepeats is how many consecutive tool answers that are errors with
	// the same text trip repeatedErrors (class runaway). Cluster default 6.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ErrorRepeats *int32 `json:"errorRepeats,omitempty"`

	// RepeatedTextBytes is how many bytes of streamed text repeating one
	// pattern of 1 to 256 bytes trip repetition (class degenerate). Cluster
	// default 4096.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RepeatedTextBytes *int32 `json:"repeatedTextBytes,omitempty"`

	// AnswerAware makes a tool's answer that differs from the answer of the
	// previous identical call count as the world moving: a poll whose answer
	// changes is not a loop. Cluster default false.
	// +optional
	AnswerAware *bool `json:"answerAware,omitempty"`

	// NudgeDelivery says whether nudges also reach the agent: "none" (an
	// Event and a Pod condition only) or "file" (the sidecar appends each
	// one to /run/turnwatch/nudges.jsonl, which an agent CLI's hook reads
	// with /run/turnwatch/bin/turnwatch-hook; docs/nudges.md). Cluster
	// default "none".
	// +kubebuilder:validation:Enum=none;file
	// +optional
	NudgeDelivery *string `json:"nudgeDelivery,omitempty"`

	// WarnFirst turns a turn's first loop trip (identical calls, cycles,
	// repeated errors) into a nudge that names the loop, where nudges are
	// delivered (nudgeDelivery "file"); that count starts over and the next
	// loop trip trips.
	// Cluster default false.
	// +optional
	WarnFirst *bool `json:"warnFirst,omitempty"`

	// Refuse makes the agent's pre-tool hook refuse the call that trips a
	// stopping detector before the CLI runs it, and end the CLI's turn,
	// where nudges are delivered (nudgeDelivery "file"; docs/nudges.md).
	// Cluster default true.
	// +optional
	Refuse *bool `json:"refuse,omitempty"`

	// RefuseWait bounds how long the pre-tool hook waits for the sidecar's
	// verdict on its call, in Go duration syntax, at most "5s"; past it the
	// call runs (fail open). Cluster default "2s".
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s))+$`
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('5s')",message="must be at most 5s"
	// +optional
	RefuseWait *string `json:"refuseWait,omitempty"`
}

// override sets *dst to src when src is set.
func override[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// Merge returns g with every field that o sets replaced by o's value. Neither
// argument is changed.
func (g Guards) Merge(o *Guards) Guards {
	out := *g.DeepCopy()
	if o == nil {
		return out
	}
	o = o.DeepCopy()
	override(&out.StepBudget, o.StepBudget)
	override(&out.IdenticalCalls, o.IdenticalCalls)
	override(&out.SilentTurns, o.SilentTurns)
	override(&out.StallTimeout, o.StallTimeout)
	override(&out.ToolTimeout, o.ToolTimeout)
	override(&out.WhitespaceDeltas, o.WhitespaceDeltas)
	override(&out.WhitespaceBytes, o.WhitespaceBytes)
	if o.WorldTools != nil {
		out.WorldTools = o.WorldTools
	}
	override(&out.MaxCostUSD, o.MaxCostUSD)
	override(&out.CycleRepeats, o.CycleRepeats)
	override(&out.ErrorRepeats, o.ErrorRepeats)
	override(&out.RepeatedTextBytes, o.RepeatedTextBytes)
	override(&out.AnswerAware, o.AnswerAware)
	override(&out.NudgeDelivery, o.NudgeDelivery)
	override(&out.WarnFirst, o.WarnFirst)
	override(&out.Refuse, o.Refuse)
	override(&out.RefuseWait, o.RefuseWait)
	return out
}
