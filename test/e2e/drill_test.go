//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// drillPassing are the results of a drill's row that pass.
var drillPassing = []string{"Caught", "CaughtOtherwise", "AsExpected"}

// TestDrill runs `kubectl turnwatch drill --scenario all` on each of the
// five config/samples/cli_*.yaml, as a team would on its own manifest: the
// built plugin creates one drill run per scenario, the controller points
// the agent at the scripted model its sidecar serves, and the plugin prints
// what each scenario expected against what happened. No Secret is made: the
// drill replaces the sample's API key: the runs go to a namespace of their
// own, without the agent-api-keys Secret other tests make. Every row must
// pass, a Caught one by the scenario's own detector; the tables go to the
// log and the report, and README's must be theirs (drill_table_test.go).
func TestDrill(t *testing.T) {
	needOperator(t)
	t.Parallel()
	needAgentImages(t)
	bin := needTools(t)
	ns := env.ns + "-drill"
	if err := runNamespace(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_, _ = kubectl("delete", "namespace", ns, "--wait=false")
		}
	})
	files, err := filepath.Glob(filepath.Join(env.root, "config/samples/cli_*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("samples: %v %v", files, err)
	}
	tables := map[string]string{}
	start := time.Now()
	drills := drillSamples(t, bin, ns, files)
	t.Run("samples", func(t *testing.T) {
		for _, d := range drills {
			t.Run(d.format, func(t *testing.T) {
				t.Logf("$ kubectl turnwatch drill -f %s --scenario all -n %s\n%s\n%s", d.file, ns, d.out, d.stderr)
				if d.err != nil {
					t.Errorf("kubectl-turnwatch drill: %v (exit 0 wanted: every guard caught what it should)\n%s", d.err, drillDebug(ns, d.sample))
				}
				tables[d.format] = d.out
				checkDrillTable(t, d.format, d.out)
			})
		}
	})
	env.report.add("drill --scenario all, the five samples", time.Since(start))
	for _, f := range files {
		format := str(readSampleRun(t, f), "spec", "format")
		if out, ok := tables[format]; ok {
			env.report.addBlock(drillCommand(format), out)
		}
	}
	if _, ok := tables["claude"]; ok {
		checkDrillVisible(t, bin, ns, "cli-claude-drill-identicalloop", "identicalLoop")
	}
	if len(tables) == len(files) {
		if err := checkReadmeDrill(env.root, tables); err != nil {
			t.Error(err)
		}
	}
}

// drillsAtOnce is how many samples TestDrill drills at once, each two runs
// at a time: six real CLIs beside the rest of the parallel phase keep this
// 2-core node busy without starving a CLI past a stall guard.
const drillsAtOnce = 3

// drilled is one sample's drill: the plugin's table, its stderr and exit.
type drilled struct {
	format, sample, file string
	out, stderr          string
	err                  error
}

// drillSamples runs the plugin's drill on each sample, drillsAtOnce at a
// time, and returns them in the files' order.
func drillSamples(t *testing.T, bin, ns string, files []string) []*drilled {
	t.Helper()
	var drills []*drilled
	var wg sync.WaitGroup
	slots := make(chan struct{}, drillsAtOnce)
	for _, f := range files {
		sample := readSampleRun(t, f)
		d := &drilled{format: str(sample, "spec", "format"), sample: sample.GetName(), file: drillFile(t, sample)}
		drills = append(drills, d)
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			d.out, d.stderr, d.err = drillSample(bin, ns, d.file)
		})
	}
	wg.Wait()
	return drills
}

// drillFile writes the sample as written but for
// spec.template.spec.hostNetwork: this node runs host-network Pods only (it
// has no Pod network: docs/e2e.md#the-local-node).
func drillFile(t *testing.T, sample *unstructured.Unstructured) string {
	t.Helper()
	run := sample.DeepCopy()
	_ = unstructured.SetNestedField(run.Object, true, "spec", "template", "spec", "hostNetwork")
	b, err := yaml.Marshal(run.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), sample.GetName()+".yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// drillSample runs the plugin's drill on a sample's file.
func drillSample(bin, ns, file string) (out, stderr string, err error) {
	// --timeout above the 15m default: three drills share two cores here.
	cmd := exec.Command(filepath.Join(bin, "kubectl-turnwatch"), "drill", "-f", file, "--scenario", "all", "-n", ns,
		"--parallel", "2", "--timeout", "30m", "--kubeconfig", env.kubeconfig)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// checkDrillTable: a row per scenario that applies to the format, in the
// scenarios' order, each passing; a Caught row caught by the scenario's
// detector for the format (scriptedmodel's Verdict).
func checkDrillTable(t *testing.T, format, out string) {
	t.Helper()
	rows, _ := drillTableRows(out)
	var want []string
	for _, sc := range scriptedmodel.Scenarios {
		if sc.Applies(format) {
			want = append(want, sc.Name)
		}
	}
	var got []string
	for _, r := range rows {
		got = append(got, r["SCENARIO"])
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: rows %v, want %v", format, got, want)
	}
	for _, r := range rows {
		if !slices.Contains(drillPassing, r["RESULT"]) {
			t.Errorf("%s/%s: result %q, want one of %v", format, r["SCENARIO"], r["RESULT"], drillPassing)
			continue
		}
		sc, err := scriptedmodel.Lookup(r["SCENARIO"])
		if err != nil || r["RESULT"] != "Caught" {
			continue
		}
		detector, _, _ := sc.Verdict(format, true)
		if caught, _, _ := strings.Cut(r["CAUGHT BY"], "/"); r["CAUGHT BY"] != r["EXPECTED"] || detector != "" && caught != detector {
			t.Errorf("%s/%s: caught by %q, expected %q (detector %q)", format, r["SCENARIO"], r["CAUGHT BY"], r["EXPECTED"], detector)
		}
	}
}

// drillDebug is the drill's runs and their turns, for a failure.
func drillDebug(ns, name string) string {
	out, _ := kubectl("-n", ns, "get", "agentruns,agentturns,pods", "-l", "turnwatch.dev/drill", "-o", "wide")
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, name) || strings.HasPrefix(line, "NAME") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// checkDrillVisible: a drill is a drill everywhere a user looks: the DRILL
// column of `kubectl get agentruns`, every Event `kubectl describe` shows
// (its result one of them), and `kubectl turnwatch explain`'s header.
func checkDrillVisible(t *testing.T, bin, ns, name, scenario string) {
	t.Helper()
	get, err := kubectl("-n", ns, "get", "agentrun", name)
	if err != nil || !strings.Contains(get, "DRILL") || !strings.Contains(get, scenario) {
		t.Errorf("kubectl get agentrun %s shows no DRILL column with %s: %v\n%s", name, scenario, err, get)
	}
	desc, err := kubectl("-n", ns, "describe", "agentrun", name)
	if missing, ok := containsAll(desc, "DrillCaught", "Faulted", "Rerolled"); err != nil || !ok {
		t.Errorf("kubectl describe agentrun %s lacks %q: %v\n%s", name, missing, err, desc)
	}
	if _, events, _ := strings.Cut(desc, "Events:"); strings.Count(events, "drill "+scenario+": ") < 3 {
		t.Errorf("kubectl describe agentrun %s: its Events do not all say they are a drill's:\n%s", name, events)
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl-turnwatch"), "explain", name, "-n", ns, "--kubeconfig", env.kubeconfig, "--color", "never").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "drill "+scenario) {
		t.Errorf("kubectl turnwatch explain %s does not say it is a drill: %v\n%s", name, err, out)
	}
}
