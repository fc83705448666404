package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

//go:generate go run . gen -out scenarios

// renderers write a Script in a CLI's format (agents.CLIs).
var renderers = map[string]func(Script) string{
	"pi": renderPi, "claude": renderClaude, "codex": renderCodex, "opencode": renderOpencode, "gemini": renderGemini,
}

// Formats are the formats the fake agent plays: the CLIs' (agents.CLIs)
// that it has a renderer for, in the table's order.
var Formats = slices.DeleteFunc(agents.Formats(), func(f string) bool { return renderers[f] == nil })

// Missing lists the scenario/format pairs that do not exist, and why: the
// format cannot express the scenario. A scenario a real CLI's stream is
// blind to (its exception in agents.CLIs: whitespace where the stream
// shows no deltas) is missing in that CLI's format too.
var Missing = withBlind(map[string]string{
	"codex/lengthStop":        "codex exec --json carries no stop reason",
	"codex/overspend":         "codex reports only tokens, once, cumulative, on turn.completed: the cost cannot climb inside the turn",
	"gemini/overspend":        "gemini reports tokens only in the final result's stats: the cost cannot climb inside the turn",
	"opencode/repeatedErrors": "opencode's bash tool reports a command that exits non-zero as completed (the exit code is metadata): only a tool that throws is status error",
})

// withBlind adds to missing the scenarios of the same name that each CLI's
// stream is blind to (scriptedmodel's Verdict).
func withBlind(missing map[string]string) map[string]string {
	for _, f := range agents.Formats() {
		for _, sc := range scriptedmodel.Scenarios {
			if _, _, ex := sc.Verdict(f, false); ex.Blind != "" {
				missing[f+"/"+sc.Name] = ex.Blind
			}
		}
	}
	return missing
}

// Generate renders every scenario in every format that can express it,
// keyed "format/scenario".
func Generate() map[string]string {
	out := map[string]string{}
	for _, s := range Scripts() {
		for _, f := range Formats {
			key := f + "/" + s.Name
			if _, ok := Missing[key]; ok {
				continue
			}
			out[key] = renderers[f](s)
		}
	}
	return out
}

// writeScenarios writes the generated streams as DIR/FORMAT/SCENARIO.log and
// removes stale files.
func writeScenarios(dir string) error {
	files := Generate()
	for _, f := range Formats {
		old, _ := filepath.Glob(filepath.Join(dir, f, "*.log"))
		for _, o := range old {
			if _, ok := files[f+"/"+strings.TrimSuffix(filepath.Base(o), ".log")]; !ok {
				if err := os.Remove(o); err != nil {
					return err
				}
			}
		}
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := filepath.Join(dir, k+".log")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[k]), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "fakeagent: wrote %d scenario streams to %s\n", len(keys), dir)
	return nil
}

// matrix renders which scenario exists in which format.
func matrix() string {
	var b strings.Builder
	w := len("scenario")
	for _, name := range scriptNames() {
		w = max(w, len(name))
	}
	fmt.Fprintf(&b, "%-*s", w, "scenario")
	for _, f := range Formats {
		fmt.Fprintf(&b, " %-9s", f)
	}
	b.WriteString("\n")
	for _, s := range Scripts() {
		fmt.Fprintf(&b, "%-*s", w, s.Name)
		for _, f := range Formats {
			mark := "yes"
			if _, ok := Missing[f+"/"+s.Name]; ok {
				mark = "-"
			}
			fmt.Fprintf(&b, " %-9s", mark)
		}
		b.WriteString("\n")
	}
	keys := make([]string, 0, len(Missing))
	for k := range Missing {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, Missing[k])
	}
	return b.String()
}
