//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// README's quickstart for a real cluster lives between these markers; every
// sh block between them is run by TestReadmeQuickstart, line by line.
const (
	quickstartBegin = "<!-- quickstart:begin" // the rest of its line is a note for readers
	quickstartEnd   = "<!-- quickstart:end -->"
	// The image README installs: a registry's, which the local node cannot
	// pull, so the test imports the image holding both binaries under that name.
	readmeImage = "registry.example.com/turnwatch:v0.1.0"
)

// quickstartCommands extracts the shell commands of README's quickstart: the
// lines of the sh blocks between the markers, backslash continuations joined,
// blank lines and comment lines dropped (a trailing comment stays: the shell
// drops it).
func quickstartCommands(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, quickstartBegin)
	if !ok {
		return nil, fmt.Errorf("README.md has no %s marker", quickstartBegin)
	}
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[i+1:]
	}
	section, _, ok := strings.Cut(rest, quickstartEnd)
	if !ok {
		return nil, fmt.Errorf("README.md has no %s marker after %s", quickstartEnd, quickstartBegin)
	}
	var cmds []string
	in := false
	cur := ""
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```sh":
			in = true
			continue
		case in && trimmed == "```":
			in = false
			continue
		case !in:
			continue
		}
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSpace(strings.TrimSuffix(trimmed, "\\")) + " "
			continue
		}
		cmds = append(cmds, cur+trimmed)
		cur = ""
	}
	if in || cur != "" {
		return nil, fmt.Errorf("README.md's quickstart has an unterminated sh block or continuation")
	}
	return cmds, nil
}

func TestQuickstartCommands(t *testing.T) {
	got, err := quickstartCommands("x\n" + quickstartBegin + " (a note) -->\n```sh\n# c\nhelm install a \\\n  --set b=c\n\nkubectl get x   # y\n```\ntext\n```yaml\nno: 1\n```\n```sh\nkubectl z\n```\n" + quickstartEnd + "\n```sh\nafter\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"helm install a --set b=c", "kubectl get x   # y", "kubectl z"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := quickstartCommands("no markers"); err == nil {
		t.Error("no error without markers")
	}
}

// The local node's stand-in for config/samples/cli_claude.yaml: the same
// run (name, format) played by the fake agent, which needs no model, no key
// and no pod network. Everything else the quickstart names is the real file.
const standInClaudeSample = `apiVersion: turnwatch.dev/v1alpha1
kind: AgentRun
metadata:
  name: cli-claude
spec:
  format: claude
  prompt: Read /etc/os-release and say in one sentence which Linux distribution this container runs.
  guards:
    maxCostUSD: "1.00"
  template:
    spec:
      hostNetwork: true
      containers:
        - name: agent
          image: ` + fakeAgentImage + `
          imagePullPolicy: Never
          args: ["--scenario", "healthy", "--format", "claude", "--speed", "4"]
`

// TestReadmeQuickstart runs README's quickstart for a real cluster as
// written, against the local node: install with Helm, apply a sample, get,
// describe, logs, uninstall; then the cluster holds nothing it did not hold
// before. What differs from a real cluster is outside the commands: the image
// README names is imported under that name, `helm install` gets the local
// node's values (hack/local-node-values.yaml: hostNetwork, probes on
// loopback) from a wrapper, and the claude sample is played by the fake agent.
func TestReadmeQuickstart(t *testing.T) {
	needInstallMode(t)
	readme, err := os.ReadFile(filepath.Join(env.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := quickstartCommands(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	checkQuickstartCovers(t, cmds)

	toolDir := needTools(t)
	if _, err := script(env.root, "hack/image.sh", "--user", "65532", readmeImage,
		filepath.Join(env.artifacts, "manager"), filepath.Join(env.artifacts, "turnwatch-sidecar")); err != nil {
		t.Fatal(err)
	}
	clearOperator(t)
	// The stand-in runs on the node's network, which the namespace the
	// quickstart applies to consents to here (outside the commands: on a
	// real cluster the sample needs no such label).
	if err := consentHostNetwork("default"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t)
	work := quickstartDir(t, toolDir)

	start := time.Now()
	for i, c := range cmds {
		t0 := time.Now()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", c)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(work, ".bin")+":"+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s   (%.1fs)\n%s", c, time.Since(t0).Seconds(), tail(string(out), 25))
		if err != nil {
			t.Fatalf("README quickstart command %d failed: %v\n%s", i+1, err, releaseDebug())
		}
		checkQuickstartOutput(t, c, string(out))
	}
	env.report.add("README quickstart (install to uninstall)", time.Since(start))
	waitNothingLeft(t, before)
}

// checkQuickstartCovers: the quickstart keeps the steps a new user needs.
func checkQuickstartCovers(t *testing.T, cmds []string) {
	t.Helper()
	all := strings.Join(cmds, "\n")
	for _, want := range []string{"helm install turnwatch charts/turnwatch", "kubectl apply -f config/samples/cli_claude.yaml",
		"kubectl get agentruns", "kubectl describe agentrun cli-claude", "kubectl logs ", "kubectl turnwatch explain cli-claude",
		"kubectl delete agentruns --all",
		"helm uninstall turnwatch",
		"turnwatch.dev/component=sidecar-rbac", "charts/turnwatch/crds"} {
		if !strings.Contains(all, want) {
			t.Errorf("README's quickstart lacks %q:\n%s", want, all)
		}
	}
}

var describeWants = regexp.MustCompile(`Phase:\s+Succeeded`)

// checkQuickstartOutput checks what the user reads at the steps that show something.
func checkQuickstartOutput(t *testing.T, cmd, out string) {
	t.Helper()
	switch {
	case strings.HasPrefix(cmd, "kubectl get agentruns"):
		if !strings.Contains(out, "cli-claude") {
			t.Errorf("`%s` does not list cli-claude:\n%s", cmd, out)
		}
	case strings.HasPrefix(cmd, "kubectl describe agentrun"):
		if !describeWants.MatchString(out) {
			t.Errorf("`%s` does not show the run Succeeded:\n%s", cmd, out)
		}
	case strings.HasPrefix(cmd, "kubectl turnwatch explain"):
		if missing, ok := containsAll(out, "AgentRun default/cli-claude: Succeeded", "cli-claude-0", "final result"); !ok {
			t.Errorf("`%s` lacks %q:\n%s", cmd, missing, out)
		}
	case strings.HasPrefix(cmd, "kubectl logs"):
		if !strings.Contains(out, `"type":"result"`) {
			t.Errorf("`%s` does not show the agent's stream with its final result:\n%s", cmd, tail(out, 5))
		}
	}
}

// quickstartDir is the folder the commands run in: the repository's charts
// and config as they are, but the claude sample replaced by its stand-in;
// .bin holds kubectl, the kubectl-turnwatch plugin (what `make build` puts
// in bin/) and a helm that adds the local node's values to install and upgrade.
func quickstartDir(t *testing.T, toolDir string) string {
	t.Helper()
	work := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(env.root, "charts"), filepath.Join(work, "charts")))
	must(os.MkdirAll(filepath.Join(work, "config", "samples"), 0o755))
	must(os.WriteFile(filepath.Join(work, "config", "samples", "cli_claude.yaml"), []byte(standInClaudeSample), 0o644))
	bin := filepath.Join(work, ".bin")
	must(os.MkdirAll(bin, 0o755))
	must(os.Symlink(filepath.Join(toolDir, "kubectl"), filepath.Join(bin, "kubectl")))
	must(os.Symlink(filepath.Join(toolDir, "kubectl-turnwatch"), filepath.Join(bin, "kubectl-turnwatch")))
	wrapper := fmt.Sprintf(`#!/bin/sh
# helm with the local node's values on install and upgrade (test/e2e/readme_test.go)
case "$1" in
  install|upgrade) exec %q "$@" -f %q ;;
  *) exec %q "$@" ;;
esac
`, filepath.Join(toolDir, "helm"), filepath.Join(env.root, "hack", "local-node-values.yaml"), filepath.Join(toolDir, "helm"))
	must(os.WriteFile(filepath.Join(bin, "helm"), []byte(wrapper), 0o755))
	return work
}
