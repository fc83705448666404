package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// Results the drill command gives a row whose run gave none; each fails
// the drill.
const (
	// resultTimedOut: the run had not ended, with a result, by --timeout.
	resultTimedOut twv1.DrillResult = "timed out"
	// resultNotCreated: the API refused the run (admission, a run of that
	// name exists); the row's note says why.
	resultNotCreated twv1.DrillResult = "not created"
	// resultDeleted: the run was deleted before it ended.
	resultDeleted twv1.DrillResult = "deleted"
)

// drillOf is the run's drill as explain's header and the drill's table show
// it; nil when the run is no drill. Until the controller records
// status.drill, Expected is the scenario's verdict for the run's format
// (what the controller will record) and Result is Pending.
func drillOf(run *twv1.AgentRun) *explain.Drill {
	if run.Spec.Drill == nil {
		return nil
	}
	d := &explain.Drill{Run: run.Name}
	if s := run.Status.Drill; s != nil {
		d.DrillStatus = *s
	} else if sc, err := scriptedmodel.Lookup(run.Spec.Drill.Scenario); err == nil {
		detector, class, _ := sc.Verdict(string(run.Spec.Format), true)
		d.Expected = twv1.DrillVerdict{Class: twv1.FaultClass(class), Detector: detector}
	}
	d.Scenario = run.Spec.Drill.Scenario // what the run plays; status.drill echoes it
	if d.Result == "" {
		d.Result = twv1.DrillPending
	}
	d.Failed = d.Result.Failed()
	return d
}

// drillEnded says whether a drill run is over: its phase final and its
// result recorded.
func drillEnded(run *twv1.AgentRun) bool {
	switch run.Status.Phase {
	case twv1.RunSucceeded, twv1.RunFaulted, twv1.RunAborted:
	default:
		return false
	}
	s := run.Status.Drill
	return s != nil && s.Result != "" && s.Result != twv1.DrillPending
}

// withoutResult marks a row that has no result: it fails the drill.
func withoutResult(d explain.Drill, result twv1.DrillResult, note string) explain.Drill {
	d.Result, d.Note, d.Failed = result, note, true
	return d
}

// drillColumns are the table's columns, each with its cell of a row.
var drillColumns = []struct {
	name string
	cell func(d explain.Drill) string
}{
	{"SCENARIO", func(d explain.Drill) string { return d.Scenario }},
	{"EXPECTED", func(d explain.Drill) string { return d.Expected.String() }},
	{"RESULT", func(d explain.Drill) string { return string(d.Result) }},
	{"CAUGHT BY", func(d explain.Drill) string {
		if d.Got == (twv1.DrillVerdict{}) {
			return "-"
		}
		return d.Got.String()
	}},
	{"WHERE", explain.Drill.Where},
	{"NUDGE", func(d explain.Drill) string { return said(d.NudgeDelivered, "delivered", "not delivered") }},
	{"REFUSED", func(d explain.Drill) string { return said(d.CallRefused, "yes", "no") }},
	{"REROLL FRESH", func(d explain.Drill) string { return said(d.RerollFresh, "yes", "no") }},
}

// said is yes or no for a flag that was set, "-" for one that was not.
func said(b *bool, yes, no string) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return yes
	}
	return no
}

// writeDrillTable writes the rows as a table, then the rows' notes. Columns
// are two spaces apart at least; no cell holds two spaces in a row.
func writeDrillTable(w io.Writer, rows []explain.Drill) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	names := make([]string, len(drillColumns))
	for i, c := range drillColumns {
		names[i] = c.name
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for _, d := range rows {
		cells := make([]string, len(drillColumns))
		for i, c := range drillColumns {
			cells[i] = c.cell(d)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes strings.Builder
	for _, d := range rows {
		if d.Note != "" {
			fmt.Fprintf(&notes, "  %s: %s\n", d.Scenario, d.Note)
		}
	}
	if notes.Len() == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nNotes:\n%s", notes.String())
	return err
}

// writeDrillJSON writes the rows as a JSON array.
func writeDrillJSON(w io.Writer, rows []explain.Drill) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rows == nil {
		rows = []explain.Drill{}
	}
	return enc.Encode(rows)
}

// drillExit is the command's exit code for its rows: 0 when none failed.
func drillExit(rows []explain.Drill) int {
	for _, d := range rows {
		if d.Failed {
			return 1
		}
	}
	return 0
}
