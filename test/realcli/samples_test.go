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
			o := runWith(t, "sample-"+string(run.Spec.Format), string(run.Spec.Format), sampleLaunch(run, nil), healthy, scriptedmodel.Options{}, map[string]any{}, t.TempDir())
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

// sampleLaunch starts a sample's agent container as a local process; extra
// is the env the controller would add (TURNWATCH_CONTINUE, ...).
func sampleLaunch(run *twv1.AgentRun, extra []string) launch {
	return func(model, home, work string) ([]string, []string, error) {
		var c corev1.Container
		for _, k := range run.Spec.Template.Spec.Containers {
			if run.Spec.AgentContainer == "" || k.Name == run.Spec.AgentContainer {
				c = k
				break
			}
		}
		ep := scriptedmodel.Endpoints[string(run.Spec.Format)]
		env := append([]string{"TURNWATCH_PROMPT=" + run.Spec.Prompt}, extra...)
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = "scripted" // the secret's API key
			}
			if e.Name == ep.Env {
				v = model + ep.Suffix
			}
			env = append(env, e.Name+"="+v)
		}
		if _, err := os.Stat(filepath.Join(home, ".config", "opencode", "node_modules")); run.Spec.Format == "opencode" && err != nil {
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

// TestSamplesContinue runs each sample twice in the same HOME and work
// folder (the CLI's state as a session store keeps it): the second run,
// given TURNWATCH_CONTINUE=true and the CLI's own session id the sidecar
// read from the first run's stream, must resume that conversation (the
// model's first request carries the first run's messages); given
// TURNWATCH_CONTINUE=false, it must start fresh.
func TestSamplesContinue(t *testing.T) {
	files, _ := filepath.Glob("../../config/samples/cli_*.yaml")
	healthy, _ := scriptedmodel.Lookup("healthy")
	for _, f := range files {
		run := readSample(t, f)
		format := string(run.Spec.Format)
		t.Run(filepath.Base(f), func(t *testing.T) {
			dir := t.TempDir()
			fresh := []string{"TURNWATCH_CONTINUE=false", "TURNWATCH_AGENT_SESSION_ID="}
			first := runWith(t, "continue-"+format, format, sampleLaunch(run, fresh), healthy, scriptedmodel.Options{}, map[string]any{}, dir)
			id := first.report.AgentSessionID
			if id == "" {
				t.Fatalf("the sidecar read no session id from %s's stream: %+v", format, first.report)
			}
			resume := []string{"TURNWATCH_CONTINUE=true", "TURNWATCH_AGENT_SESSION_ID=" + id}
			second := runWith(t, "continue-"+format, format, sampleLaunch(run, resume), healthy, scriptedmodel.Options{}, map[string]any{}, dir)
			if m := second.model.Main(); len(m) == 0 || m[0].Conversation.Fresh() || !m[0].Conversation.Contains("PRETTY_NAME") {
				t.Errorf("the continued run's first request does not carry the first run's conversation")
			}
			if r := second.report; len(r.Trips) > 0 || !r.Result || r.ResultError != "" {
				t.Errorf("the continued run did not succeed: %+v", r)
				for _, q := range second.model.Requests() {
					if q.Seq <= 3 {
						t.Logf("request %d step %d prompts %d: %s\n%s", q.Seq, q.Step, q.Prompts, q.Reply, tail(string(q.Body), 1500))
					}
				}
			}
			third := runWith(t, "continue-"+format, format, sampleLaunch(run, fresh), healthy, scriptedmodel.Options{}, map[string]any{}, dir)
			if m := third.model.Main(); len(m) == 0 || !m[0].Conversation.Fresh() {
				t.Errorf("a run without continue resumed a conversation")
			}
		})
	}
}
