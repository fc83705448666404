package explain

import (
	"fmt"
	"strings"
)

// Verdict is a fault's class and detector; both empty for a success.
type Verdict struct {
	Class    string `json:"class,omitempty"`
	Detector string `json:"detector,omitempty"`
}

// String is the verdict as the drill's table and explain's header show it:
// detector/class, the one of them that is set (agent-error has no
// detector, a nudge no class), or "none".
func (v Verdict) String() string {
	switch {
	case v.Detector != "" && v.Class != "":
		return v.Detector + "/" + v.Class
	case v.Detector != "":
		return v.Detector
	case v.Class != "":
		return v.Class
	}
	return "none"
}

// Drill is one drill run (docs/drill.md): its scenario, what the scenario
// expected of the run's CLI and how the run ended against it, as the run's
// status.drill says. It heads `kubectl turnwatch explain` of a drill run and
// is a row of `kubectl turnwatch drill`.
type Drill struct {
	// Run is the drill run's name.
	Run      string  `json:"run"`
	Scenario string  `json:"scenario"`
	Expected Verdict `json:"expected"`
	// Note says why Expected is not the scenario's own verdict (the CLI's
	// own guard, or a stream blind to it), or why the row has no result.
	Note string `json:"note,omitempty"`
	// Result is status.drill.result (Pending until the run ends), or, from
	// the drill command, "timed out" or "not created".
	Result string  `json:"result"`
	Got    Verdict `json:"got"`
	// AtCall is the tool call at which the first faulted turn was stopped.
	AtCall         int64 `json:"atCall,omitempty"`
	NudgeDelivered *bool `json:"nudgeDelivered,omitempty"`
	CallRefused    *bool `json:"callRefused,omitempty"`
	RerollFresh    *bool `json:"rerollFresh,omitempty"`
	// Failed says whether the row fails the drill: a guard missed, a false
	// alarm, or no result.
	Failed bool `json:"failed"`
}

// Where is the tool call the run was stopped at, "call N", or "-".
func (d Drill) Where() string {
	if d.AtCall <= 0 {
		return "-"
	}
	return fmt.Sprintf("call %d", d.AtCall)
}

// headline is the drill's line in explain's header.
func (d Drill) headline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drill %s: expected %s, result %s", d.Scenario, d.Expected, orDash(d.Result))
	if d.Got != (Verdict{}) {
		fmt.Fprintf(&b, " (got %s", d.Got)
		if d.AtCall > 0 {
			fmt.Fprintf(&b, " at %s", d.Where())
		}
		b.WriteString(")")
	}
	return b.String()
}
