package protocol

// DrillReport is the message of ConditionDrill: what the scripted model
// served a drill turn's agent (docs/drill.md).
type DrillReport struct {
	// Scenario is the scenario the model played.
	Scenario string `json:"scenario"`
	// Requests counts the requests of the turn's main conversation the
	// model answered; SideRequests the rest (titles, summaries, a CLI's
	// own checks).
	Requests     int `json:"requests"`
	SideRequests int `json:"sideRequests,omitempty"`
	// Fresh is true when the turn's first main request carried its prompt
	// alone: no earlier turn's messages. A reroll must start fresh; a
	// continued turn must not.
	Fresh bool `json:"fresh"`
}
