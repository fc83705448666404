//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// README's sample `kubectl get agentruns` table is the demo's real output:
// the demo's runs are scripted, so every column but AGE comes out the same
// on every run, and a change that moves a count or a cost must change
// README too.

// readmeDemoCommand opens README's sample table.
const readmeDemoCommand = "$ kubectl get agentruns -n turnwatch-demo"

// agentrunRows maps each run named in names to its row's columns before
// AGE, from the lines of a `kubectl get agentruns` table in text.
func agentrunRows(text string, names []string) map[string]string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && want[f[0]] {
			rows[f[0]] = strings.Join(f[:6], " ") // NAME PHASE ATTEMPTS STEPS COST REASON
		}
	}
	return rows
}

// readmeDemoTable is README's sample table, after its command line.
func readmeDemoTable(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(b), readmeDemoCommand)
	if !ok {
		return "", fmt.Errorf("README.md has no %q", readmeDemoCommand)
	}
	table, _, _ := strings.Cut(rest, "```")
	return table, nil
}

// checkReadmeTable compares README's sample rows with the demo's output.
func checkReadmeTable(root, demoOut string, runs []string) error {
	table, err := readmeDemoTable(root)
	if err != nil {
		return err
	}
	readme, got := agentrunRows(table, runs), agentrunRows(demoOut, runs)
	var diffs []string
	for _, r := range runs {
		if readme[r] != got[r] {
			diffs = append(diffs, fmt.Sprintf("README: %q\n  demo: %q", readme[r], got[r]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("README's sample table is not the demo's output:\n%s", strings.Join(diffs, "\n"))
	}
	return nil
}
