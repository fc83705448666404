//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// README's drill tables are TestDrill's real output, one per sample: the
// drills are scripted, so the verdict columns come out the same on every
// run, and a change that moves a verdict or a call must change README too.
// The last three columns hang on timing as well as on the product (whether
// a hook's ack or refusal came before the sidecar's drain ended, whether a
// reroll's CLI asked the model before a 15 s stall guard tripped on a
// loaded node), so they are logged when they differ, not compared. Rows
// compare cell by cell, so a column's width does not matter.

// drillStable are the columns README must match.
var drillStable = []string{"SCENARIO", "EXPECTED", "RESULT", "CAUGHT BY", "WHERE"}

// drillCommand opens README's table of format's sample.
func drillCommand(format string) string {
	return fmt.Sprintf("$ kubectl turnwatch drill -f config/samples/cli_%s.yaml --scenario all", format)
}

// drillCells splits a table line at two spaces or more: no cell holds two.
var drillCells = regexp.MustCompile(`\s{2,}`)

// drillTableRows reads the drill's table: its rows by column name, then its
// notes' lines.
func drillTableRows(out string) (rows []map[string]string, notes []string) {
	table, rest, _ := strings.Cut(strings.TrimLeft(out, "\n"), "\n\n")
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	head := drillCells.Split(strings.TrimSpace(lines[0]), -1)
	for _, line := range lines[1:] {
		cells := drillCells.Split(strings.TrimSpace(line), -1)
		row := map[string]string{}
		for i, c := range cells {
			if i < len(head) {
				row[head[i]] = c
			}
		}
		rows = append(rows, row)
	}
	for _, line := range strings.Split(rest, "\n") {
		if line = strings.TrimSpace(line); line != "" && line != "Notes:" {
			notes = append(notes, line)
		}
	}
	return rows, notes
}

// normalDrill is a table as its stable cells and notes, one line each.
func normalDrill(out string) string {
	rows, notes := drillTableRows(out)
	var b strings.Builder
	for _, r := range rows {
		cols := make([]string, 0, len(drillStable))
		for _, k := range drillStable {
			cols = append(cols, k+"="+r[k])
		}
		fmt.Fprintln(&b, strings.Join(cols, " | "))
	}
	for _, n := range notes {
		fmt.Fprintln(&b, n)
	}
	return b.String()
}

// readmeDrillTable is README's table of format's sample, after its command
// line.
func readmeDrillTable(readme, format string) (string, error) {
	_, rest, ok := strings.Cut(readme, drillCommand(format)+"\n")
	if !ok {
		return "", fmt.Errorf("README.md has no %q", drillCommand(format))
	}
	table, _, _ := strings.Cut(rest, "```")
	return table, nil
}

// checkReadmeDrill compares README's drill tables with the run's; on a
// difference it prints the run's tables as README shows them, to paste.
func checkReadmeDrill(root string, tables map[string]string) error {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return err
	}
	var differ []string
	var paste strings.Builder
	for _, format := range slices.Sorted(maps.Keys(tables)) {
		out := tables[format]
		fmt.Fprintf(&paste, "```text\n%s\n%s```\n\n", drillCommand(format), out)
		readme, err := readmeDrillTable(string(b), format)
		if err != nil || normalDrill(readme) != normalDrill(out) {
			differ = append(differ, format)
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("README's drill tables of %v are not this run's output; README.md's section "+
			"\"Drill: prove the guards on your own image\" should hold:\n\n%s", differ, paste.String())
	}
	return nil
}

func TestDrillTableRows(t *testing.T) {
	out := `SCENARIO       EXPECTED                RESULT      CAUGHT BY               WHERE   NUDGE          REFUSED  REROLL FRESH
healthy        none                    AsExpected  -                       -       -              -        -
identicalLoop  identicalCalls/runaway  Caught      identicalCalls/runaway  call 4  not delivered  yes      yes

Notes:
  healthy: a note
`
	rows, notes := drillTableRows(out)
	if len(rows) != 2 || rows[1]["CAUGHT BY"] != "identicalCalls/runaway" || rows[1]["WHERE"] != "call 4" ||
		rows[1]["NUDGE"] != "not delivered" || rows[1]["REROLL FRESH"] != "yes" || rows[0]["RESULT"] != "AsExpected" {
		t.Errorf("rows %v", rows)
	}
	if len(notes) != 1 || notes[0] != "healthy: a note" {
		t.Errorf("notes %q", notes)
	}
	narrow := strings.ReplaceAll(out, "         -        -\n", "  -  -\n")
	if normalDrill(narrow) != normalDrill(out) {
		t.Errorf("widths matter:\n%s\n%s", normalDrill(narrow), normalDrill(out))
	}
	if normalDrill(strings.Replace(out, "call 4", "call 5", 1)) == normalDrill(out) {
		t.Error("a changed cell compares equal")
	}
	if normalDrill(strings.Replace(out, "not delivered", "delivered    ", 1)) != normalDrill(out) {
		t.Error("a timing column compares")
	}
	readme := "x\n```text\n" + drillCommand("pi") + "\n" + out + "```\n"
	if err := checkReadmeDrill(t.TempDir(), map[string]string{"pi": out}); err == nil {
		t.Error("no README, no error")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkReadmeDrill(dir, map[string]string{"pi": out}); err != nil {
		t.Error(err)
	}
	err := checkReadmeDrill(dir, map[string]string{"pi": strings.Replace(out, "Caught ", "Missed ", 1)})
	if err == nil || !strings.Contains(err.Error(), drillCommand("pi")+"\nSCENARIO") {
		t.Errorf("a changed table: %v", err)
	}
}
