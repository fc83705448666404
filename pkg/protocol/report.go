package protocol

import (
	"encoding/json"
	"time"

	"turnwatch.dev/turnwatch/pkg/quote"
)

// Condition is a Pod condition as the sidecar writes it: always True, with
// its type, reason and message. The encoders below make each one the
// protocol names; Read reads them all back.
type Condition struct {
	Type    string
	Reason  string
	Message string
}

// TripCondition is ConditionTripped for a detector that ended the turn.
func TripCondition(detector, message string) Condition {
	return Condition{Type: ConditionTripped, Reason: ReasonFor(detector), Message: message}
}

// NudgeCondition is ConditionSilent for a nudge's streak (NudgeMessage).
func NudgeCondition(streak int, detector, text string) Condition {
	return Condition{Type: ConditionSilent, Reason: ReasonFor(detector), Message: NudgeMessage(streak, text)}
}

// ProgressCondition is ConditionProgress carrying p.
func ProgressCondition(p Progress) Condition {
	return Condition{Type: ConditionProgress, Reason: ReasonRunning, Message: Marshal(p)}
}

// FinishedCondition is ConditionFinished carrying the stream's summary; its
// reason says whether the format's final result event was seen.
func FinishedCondition(s Summary) Condition {
	reason := ReasonNoResult
	if s.Result {
		reason = ReasonResult
	}
	return Condition{Type: ConditionFinished, Reason: reason, Message: Marshal(s)}
}

// ResultCondition is ConditionResult carrying the summary so far.
func ResultCondition(s Summary) Condition {
	return Condition{Type: ConditionResult, Reason: ReasonResult, Message: Marshal(s)}
}

// DrillCondition is ConditionDrill carrying what the scripted model served.
func DrillCondition(d DrillReport) Condition {
	return Condition{Type: ConditionDrill, Reason: ReasonDrillServed, Message: Marshal(d)}
}

// RefusedCondition is ConditionCallRefused naming the call the hook refused.
func RefusedCondition(callID string) Condition {
	return Condition{Type: ConditionCallRefused, Reason: ReasonCallRefused, Message: callID}
}

// WouldTripCondition is ConditionWouldTrip listing the audited detectors'
// would-trips.
func WouldTripCondition(ws []WouldTrip) Condition {
	return Condition{Type: ConditionWouldTrip, Reason: ReasonWouldTrip, Message: Marshal(ws)}
}

// WarningCondition is one of Warnings with its message.
func WarningCondition(w Warning, message string) Condition {
	return Condition{Type: w.Condition, Reason: w.Reason, Message: message}
}

// FailedCondition is ConditionFailed with one of SidecarFailureReasons.
func FailedCondition(reason, message string) Condition {
	return Condition{Type: ConditionFailed, Reason: reason, Message: message}
}

// PodCondition is a Pod condition as the controller reads it: the written
// Condition, whether its status is True, and its lastTransitionTime.
type PodCondition struct {
	Condition
	True  bool
	Since time.Time
}

// PodReport is what a turn's Pod's conditions say, read in one pass by Read.
// The texts that carry the agent's words are escaped (quote.Text): the
// controller copies them into the turn's status and its Events.
type PodReport struct {
	// Started is true once the sidecar wrote any of Progress, Finished,
	// Tripped or Result, whatever their status.
	Started bool
	// Trip is ConditionTripped when True: the detector that ended the turn.
	Trip *Trip
	// Failure is ConditionFailed when True: why the sidecar gave up.
	Failure *Failure
	// Finished is ConditionFinished's summary when True (a zero Summary when
	// its message does not read); FinishedAt its lastTransitionTime.
	// FinishedSeen is true when the condition is there, whatever its status.
	Finished     *Summary
	FinishedAt   time.Time
	FinishedSeen bool
	// Result is ConditionResult's summary when True; ResultAt its
	// lastTransitionTime. An older sidecar's prose message, or a summary
	// without a result, reads as a plain result.
	Result   *Summary
	ResultAt time.Time
	// Progress is ConditionProgress's; Counts the latest steps and cost the
	// sidecar reported: the final summary if there is one, else Progress.
	Progress, Counts *Progress
	// Nudge is ConditionSilent's message when True.
	Nudge string
	// Drill is ConditionDrill's report when True and readable.
	Drill *DrillReport
	// RefusedCall is ConditionCallRefused's call id when True ("?" when it
	// names none).
	RefusedCall string
	// WouldTrips are ConditionWouldTrip's when True.
	WouldTrips []WouldTrip
	// Warnings are the Warnings set True: reason -> message.
	Warnings map[string]string
}

// Trip is a detector that ended the turn, as ConditionTripped tells it.
type Trip struct{ Detector, Message string }

// Failure is why the sidecar gave up, as ConditionFailed tells it (its
// message is the API server's error, kept as it stands).
type Failure struct{ Reason, Message string }

// Read reads a Pod's conditions (those the protocol does not name are
// passed over).
func Read(conds []PodCondition) PodReport {
	var rep PodReport
	for _, c := range conds {
		rep.read(c)
	}
	if rep.Counts == nil {
		rep.Counts = rep.Progress
	}
	return rep
}

func (rep *PodReport) read(c PodCondition) {
	switch c.Type {
	case ConditionProgress, ConditionFinished, ConditionTripped, ConditionResult:
		rep.Started = true
	}
	switch c.Type {
	case ConditionProgress:
		var p Progress
		if json.Unmarshal([]byte(c.Message), &p) == nil {
			rep.Progress = &p
		}
	case ConditionFinished:
		rep.readFinished(c)
		return
	}
	if !c.True {
		return
	}
	if w, ok := warningOf(c.Type); ok {
		rep.warn(w, c.Message)
		return
	}
	rep.readTrue(c)
}

// readFinished reads ConditionFinished: its counts whatever its status,
// its summary when True.
func (rep *PodReport) readFinished(c PodCondition) {
	rep.FinishedSeen = true
	var s Summary
	err := json.Unmarshal([]byte(c.Message), &s) // unreadable: no final word
	if err == nil {
		rep.Counts = &s.Progress
	}
	if c.True {
		rep.Finished, rep.FinishedAt = &s, c.Since
	}
}

// readTrue reads the conditions that count only when True.
func (rep *PodReport) readTrue(c PodCondition) {
	switch c.Type {
	case ConditionTripped:
		rep.Trip = &Trip{Detector: DetectorFor(c.Reason), Message: quote.Text(c.Message)}
	case ConditionFailed:
		rep.Failure = &Failure{Reason: c.Reason, Message: c.Message}
	case ConditionResult:
		var s Summary
		if json.Unmarshal([]byte(c.Message), &s) != nil || !s.Result {
			s = Summary{Result: true}
		}
		rep.Result, rep.ResultAt = &s, c.Since
	case ConditionSilent:
		rep.Nudge = quote.Text(c.Message)
	default:
		rep.readReports(c)
	}
}

// readReports reads the reports the turn keeps beside its outcome.
func (rep *PodReport) readReports(c PodCondition) {
	switch c.Type {
	case ConditionDrill:
		var d DrillReport
		if json.Unmarshal([]byte(c.Message), &d) == nil {
			rep.Drill = &d
		}
	case ConditionCallRefused:
		rep.RefusedCall = "?"
		if c.Message != "" {
			rep.RefusedCall = quote.Text(c.Message) // the id is the agent's
		}
	case ConditionWouldTrip:
		rep.WouldTrips = ParseWouldTrips(c.Message)
		for i := range rep.WouldTrips {
			rep.WouldTrips[i].Message = quote.Text(rep.WouldTrips[i].Message)
		}
	}
}

func (rep *PodReport) warn(w Warning, message string) {
	if message = quote.Text(message); message == "" {
		return
	}
	if rep.Warnings == nil {
		rep.Warnings = map[string]string{}
	}
	rep.Warnings[w.Reason] = message
}

// warningOf is the warning whose condition type is typ.
func warningOf(typ string) (Warning, bool) {
	for _, w := range Warnings {
		if w.Condition == typ {
			return w, true
		}
	}
	return Warning{}, false
}
