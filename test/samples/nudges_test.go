package samples_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Every CLI sample wires turnwatch's adapter for its CLI (docs/nudges.md):
// nudges are delivered; the command-hook CLIs are given settings that run
// turnwatch-hook before and after each tool call in that CLI's shape; the
// plugin CLIs load the adapter file the sidecar writes.
func TestCLISamplesWireTheHook(t *testing.T) {
	tests := []struct {
		file, env, pre, post, cli, flag string
	}{
		{"cli_claude.yaml", "HOOK_SETTINGS", "PreToolUse", "PostToolUse", "claude", "--settings /tmp/claude-settings.json"},
		{"cli_codex.yaml", "HOOKS", "PreToolUse", "PostToolUse", "codex", "--dangerously-bypass-hook-trust"},
		{"cli_gemini.yaml", "HOOK_SETTINGS", "BeforeTool", "AfterTool", "gemini", "> .gemini/settings.json"},
		{file: "cli_opencode.yaml", env: "OPENCODE_CONFIG_CONTENT", flag: "opencode run"},
		{file: "cli_pi.yaml", flag: `-e "$ext"`},
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
				t.Errorf("command line %q does not give the CLI its hook (%q)", line, tt.flag)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			switch tt.file {
			case "cli_opencode.yaml":
				var cfg struct{ Plugin []string }
				if err := json.Unmarshal([]byte(env[tt.env]), &cfg); err != nil || len(cfg.Plugin) != 1 || cfg.Plugin[0] != "/run/turnwatch/opencode-plugin.js" {
					t.Errorf("%s plugin %v (%v): want /run/turnwatch/opencode-plugin.js", tt.env, cfg.Plugin, err)
				}
				return
			case "cli_pi.yaml":
				if !strings.Contains(line, `ext="$TURNWATCH_NUDGE_DIR/pi-extension.js"`) {
					t.Errorf("command line %q does not load the pi extension the sidecar writes", line)
				}
				return
			}
			var s struct {
				Hooks map[string][]struct {
					Hooks []struct{ Type, Command string } `json:"hooks"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal([]byte(env[tt.env]), &s); err != nil {
				t.Fatalf("%s %q: %v", tt.env, env[tt.env], err)
			}
			for _, event := range []string{tt.pre, tt.post} {
				groups := s.Hooks[event]
				if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Type != "command" ||
					!strings.HasPrefix(groups[0].Hooks[0].Command, "/run/turnwatch/bin/turnwatch-hook --cli "+tt.cli) {
					t.Errorf("%s hooks %+v", event, groups)
				}
			}
		})
	}
}
