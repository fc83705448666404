//go:build realcli

package realcli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"turnwatch.dev/turnwatch/pkg/agents"
)

// cli is how one real CLI is run headless against the scripted model: the
// same flags and switches as its sample (config/samples/cli_*.yaml), with
// every endpoint on the model and every call home switched off.
type cli struct {
	name, format string
	// model is the model the CLI asks for.
	model string
	// env is the CLI's environment besides PATH and HOME.
	env func(model string) []string
	// files are written before the run, relative to HOME ("~/...") or to
	// the working folder.
	files func(model string) map[string]string
	// args are the command's arguments for a fresh turn.
	args func(prompt string) []string
	// seed, when set, prepares HOME before the run.
	seed func(home string) error
	// node, when set, are the flags node runs the CLI's script with, as
	// its sample does.
	node []string
}

// The models the CLIs ask the scripted model for: the Anthropic API's
// CLIs (claude, pi, opencode) ask for modelName.
const (
	modelName   = "claude-sonnet-4-5"
	codexModel  = "gpt-5.5"
	geminiModel = "gemini-2.5-flash"
)

var clis = []cli{
	{
		name: "claude", format: "claude", model: modelName,
		env: func(model string) []string {
			return []string{
				"ANTHROPIC_BASE_URL=" + model, "ANTHROPIC_API_KEY=scripted",
				"IS_SANDBOX=1", // bypass mode as root
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
				"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
			}
		},
		args: func(prompt string) []string {
			return []string{"-p", prompt, "--output-format", "stream-json", "--verbose",
				"--include-partial-messages", "--dangerously-skip-permissions", "--model", modelName}
		},
	},
	{
		name: "pi", format: "pi", model: modelName,
		env: func(string) []string { return []string{"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"} },
		files: func(model string) map[string]string {
			return map[string]string{"~/.pi/agent/models.json": mustJSON(map[string]any{"providers": map[string]any{
				"scripted": map[string]any{"baseUrl": model, "api": "anthropic-messages", "apiKey": "scripted",
					"models": []any{map[string]any{"id": modelName, "cost": map[string]any{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}}},
			}})}
		},
		args: func(prompt string) []string {
			return []string{"--mode", "json", "--provider", "scripted", "--model", modelName, prompt}
		},
	},
	{
		name: "codex", format: "codex", model: codexModel,
		env: func(string) []string { return []string{"SCRIPTED_API_KEY=scripted"} },
		args: func(prompt string) []string {
			return append(append([]string{"exec", "--json", "--skip-git-repo-check",
				"--dangerously-bypass-approvals-and-sandbox", "-m", codexModel}, codexProvider...), prompt)
		},
		files: func(model string) map[string]string {
			// The built-in provider ignores OPENAI_BASE_URL: a provider of
			// our own, in config.toml, is what points codex at the model.
			return map[string]string{"~/.codex/config.toml": `model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "` + model + `/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
`}
		},
	},
	{
		name: "gemini", format: "gemini", model: geminiModel,
		// Without it, node's exit waits for V8's background compile of a
		// WebAssembly module: gone up to 2.9 s after its last line.
		node: []string{"--liftoff-only"},
		env: func(model string) []string {
			return []string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + model,
				"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}
		},
		files: func(string) map[string]string {
			return map[string]string{"~/.gemini/settings.json": mustJSON(map[string]any{
				"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"privacy":   map[string]any{"usageStatisticsEnabled": false},
				"telemetry": map[string]any{"enabled": false},
				"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			})}
		},
		args: func(prompt string) []string {
			return []string{"-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo", "-m", geminiModel}
		},
	},
	{
		name: "opencode", format: "opencode", model: modelName,
		env: func(model string) []string {
			return []string{
				"OPENCODE_CONFIG_CONTENT=" + mustJSON(map[string]any{
					"model": "anthropic/" + modelName, "small_model": "anthropic/" + modelName,
					"autoupdate": false, "share": "disabled",
					"permission": map[string]any{"*": "allow", "bash": "allow", "edit": "allow", "external_directory": "allow"},
					"provider":   map[string]any{"anthropic": map[string]any{"options": map[string]any{"baseURL": model + "/v1", "apiKey": "scripted"}}},
				}),
				"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_DEFAULT_PLUGINS=true",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=true", "OPENCODE_DISABLE_SHARE=true",
			}
		},
		args: func(prompt string) []string { return []string{"run", "--format", "json", prompt} },
		// Without its plugin SDK in the config folder, opencode fetches it
		// from the npm registry at every start.
		seed: func(home string) error {
			return os.CopyFS(filepath.Join(home, ".config", "opencode"), os.DirFS(filepath.Join(clisDir, "opencode-config")))
		},
	},
}

// Every CLI of the table (agents.CLIs) is run here, and nothing else: its
// exceptions are found by running it.
func TestEveryCLIIsRun(t *testing.T) {
	run := map[string]bool{}
	for _, c := range clis {
		if _, ok := agents.Lookup(c.format); !ok {
			t.Errorf("%s: format %q is no CLI's of agents.CLIs", c.name, c.format)
		}
		run[c.format] = true
	}
	for _, c := range agents.CLIs {
		if !run[c.Format] {
			t.Errorf("CLI %s of agents.CLIs is not run: its exceptions are unproven", c.Format)
		}
	}
}

// codexProvider switches off what codex fetches at start (plugins).
var codexProvider = []string{"--disable", "plugins"}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// writeFiles writes a CLI's files under home and work.
func writeFiles(files map[string]string, home, work string) error {
	for p, content := range files {
		dst := filepath.Join(work, p)
		if rest, ok := cutPrefix(p, "~/"); ok {
			dst = filepath.Join(home, rest)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}
