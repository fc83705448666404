//go:build realcli

package realcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// sampleEndpoints is, per format, the env var of config/samples/cli_*.yaml
// that names the model endpoint, and the path the CLI expects after it.
var sampleEndpoints = map[twv1.Format]struct{ env, suffix string }{
	"claude":   {"ANTHROPIC_BASE_URL", ""},
	"codex":    {"OPENAI_BASE_URL", "/v1"},
	"gemini":   {"GOOGLE_GEMINI_BASE_URL", ""},
	"opencode": {"ANTHROPIC_BASE_URL", "/v1"},
	"pi":       {"ANTHROPIC_BASE_URL", ""},
}

// TestSamples runs each config/samples/cli_*.yaml as written: its agent
// container's command, args and env, with only the image (the CLI from
// hack/clis.sh on PATH) and the model endpoint changed, and the secrets'
// keys a dummy. The sample's own task must succeed, with no call home.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/cli_*.yaml")
	if err != nil || len(files) != 5 {
		t.Fatalf("samples: %v %v", files, err)
	}
	healthy, err := scriptedmodel.Lookup("healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		run := readSample(t, f)
		t.Run(filepath.Base(f), func(t *testing.T) {
			o := runWith(t, "sample-"+string(run.Spec.Format), string(run.Spec.Format), sampleLaunch(run), healthy, scriptedmodel.Options{}, map[string]any{})
			r := o.report
			t.Logf("report %+v", r)
			if len(r.Trips) > 0 || !r.Result || r.ResultError != "" || r.Steps < 1 || r.Unparsed != 0 {
				t.Errorf("the sample's task did not succeed: %+v", r)
			}
			if !o.model.Told("PRETTY_NAME") {
				last := o.model.Requests()
				t.Errorf("the model never saw the tool's answer (/etc/os-release); its last request: %s", around(string(last[len(last)-1].Body), "functionResponse", 700))
			}
		})
	}
}

func readSample(t *testing.T, path string) *twv1.AgentRun {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run twv1.AgentRun
	if err := yaml.UnmarshalStrict(b, &run); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &run
}

// sampleLaunch starts a sample's agent container as a local process.
func sampleLaunch(run *twv1.AgentRun) launch {
	return func(model, home, work string) ([]string, []string, error) {
		var c corev1.Container
		for _, k := range run.Spec.Template.Spec.Containers {
			if run.Spec.AgentContainer == "" || k.Name == run.Spec.AgentContainer {
				c = k
				break
			}
		}
		ep := sampleEndpoints[run.Spec.Format]
		env := []string{"TURNWATCH_PROMPT=" + run.Spec.Prompt}
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = "scripted" // the secret's API key
			}
			if e.Name == ep.env {
				v = model + ep.suffix
			}
			env = append(env, e.Name+"="+v)
		}
		if run.Spec.Format == "opencode" {
			// The image's config folder holds opencode's plugin SDK.
			if err := os.CopyFS(filepath.Join(home, ".config", "opencode"), os.DirFS(filepath.Join(clisDir, "opencode-config"))); err != nil {
				return nil, nil, err
			}
		}
		return append(append([]string{}, c.Command...), c.Args...), env, nil
	}
}

// around is the text of s around the first sub, for a failure's message.
func around(s, sub string, n int) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return tail(s, n)
	}
	return s[max(0, i-n/4):min(len(s), i+n)]
}
