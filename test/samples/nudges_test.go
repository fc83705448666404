package samples_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The Claude Code and Gemini CLI samples wire turnwatch-hook as their CLI's
// hook (docs/nudges.md): nudges are delivered, and the settings the CLI is
// given run the hook after each tool call in that CLI's shape.
func TestCLISamplesWireTheHook(t *testing.T) {
	tests := []struct {
		file, event, cli, flag string
	}{
		{"cli_claude.yaml", "PostToolUse", "claude", "--settings /tmp/claude-settings.json"},
		{"cli_gemini.yaml", "AfterTool", "gemini", "> .gemini/settings.json"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			run := readRun(t, filepath.Join(samplesDir, tt.file))
			if g := run.Spec.Guards; g == nil || g.NudgeDelivery == nil || *g.NudgeDelivery != "file" {
				t.Fatalf("guards %+v: want nudgeDelivery file", g)
			}
			c := agent(t, run)
			line := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
			if !strings.Contains(line, tt.flag) {
				t.Errorf("command line %q does not give the CLI its hook settings (%q)", line, tt.flag)
			}
			var settings string
			for _, e := range c.Env {
				if e.Name == "HOOK_SETTINGS" {
					settings = e.Value
				}
			}
			var s struct {
				Hooks map[string][]struct {
					Hooks []struct{ Type, Command string } `json:"hooks"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal([]byte(settings), &s); err != nil {
				t.Fatalf("HOOK_SETTINGS %q: %v", settings, err)
			}
			groups := s.Hooks[tt.event]
			if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Type != "command" ||
				groups[0].Hooks[0].Command != "/run/turnwatch/bin/turnwatch-hook --cli "+tt.cli {
				t.Errorf("%s hooks %+v", tt.event, groups)
			}
		})
	}
}
