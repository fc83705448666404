package explain

import (
	"fmt"
	"strings"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// Drill is one drill run (docs/drill.md): its scenario, what the scenario
// expected of the run's CLI and how the run ended against it, as the run's
// status.drill says. It heads `kubectl turnwatch explain` of a drill run and
// is a row of `kubectl turnwatch drill`.
type Drill struct {
	// Run is the drill run's name.
	Run string `json:"run"`
	// DrillStatus is the run's status.drill; its fields inline into the
	// JSON. Its Result is Pending until the run ends, or, from the drill
	// command, one of the command's own (a run that gave none); its Note
	// then says why.
	twv1.DrillStatus
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
	fmt.Fprintf(&b, "drill %s: expected %s, result %s", d.Scenario, d.Expected, orDash(string(d.Result)))
	if d.Got != (twv1.DrillVerdict{}) {
		fmt.Fprintf(&b, " (got %s", d.Got)
		if d.AtCall > 0 {
			fmt.Fprintf(&b, " at %s", d.Where())
		}
		b.WriteString(")")
	}
	return b.String()
}
