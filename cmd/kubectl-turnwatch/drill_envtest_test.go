package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// drillCluster is an envtest API server with turnwatch's CRDs, a
// kubeconfig file for the plugin, and a client for the test.
type drillCluster struct {
	kubeconfig string
	c          client.Client
}

func startDrillCluster(t *testing.T) drillCluster {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	env, cfg := testenv.StartT(t, filepath.Join("config", "crd", "bases"))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return drillCluster{kubeconfig: kc, c: c}
}

func (k drillCluster) namespace(t *testing.T, name string) string {
	t.Helper()
	if err := k.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// drill runs `kubectl turnwatch drill` with args against the cluster.
func (k drillCluster) drill(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append(append([]string{"drill"}, args...), "--kubeconfig", k.kubeconfig), &out, &errOut)
	return code, out.String(), errOut.String()
}

// playController stands in for the controller: it ends every drill run of
// the namespaces in answers the way answer says, writing the phase and
// status.drill, until the test ends. Runs of other namespaces never end.
func playController(t *testing.T, c client.Client, answer func(run *twv1.AgentRun) twv1.AgentRunStatus, namespaces ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, ns := range namespaces {
				var list twv1.AgentRunList
				if err := c.List(ctx, &list, client.InNamespace(ns), client.HasLabels{twv1.LabelDrill}); err != nil {
					continue
				}
				for i := range list.Items {
					r := &list.Items[i]
					if r.Status.Drill != nil {
						continue
					}
					r.Status = answer(r)
					if err := c.Status().Update(ctx, r); err != nil && ctx.Err() == nil {
						t.Errorf("status of %s: %v", r.Name, err)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// piAnswer is how the stand-in controller ends pi's drill runs: each
// scenario caught as expected (a trip at a call refused, a rerolled class
// fresh), a success as expected, but lengthStop caught otherwise.
func piAnswer(run *twv1.AgentRun) twv1.AgentRunStatus {
	sc, _ := scriptedmodel.Lookup(run.Spec.Drill.Scenario)
	detector, class, _ := sc.Verdict(string(run.Spec.Format), true)
	s := &twv1.DrillStatus{Scenario: sc.Name, Expected: twv1.DrillVerdict{Class: twv1.FaultClass(class), Detector: detector}}
	phase := twv1.RunFaulted
	switch {
	case sc.Name == "lengthStop":
		s.Result, s.Got, s.Note = twv1.DrillCaughtOtherwise, twv1.DrillVerdict{Class: "overspend", Detector: "spend"}, "the spend guard ended it first"
	case class == "":
		phase, s.Result = twv1.RunSucceeded, twv1.DrillAsExpected
		if detector != "" {
			s.NudgeDelivered = boolp(true)
		}
	default:
		s.Result, s.Got = twv1.DrillCaught, s.Expected
		if slices.Contains([]string{"identicalCalls", "cycles", "repeatedErrors"}, detector) {
			s.AtCall, s.CallRefused = 4, boolp(true)
		}
		if class != "overspend" && class != "length" {
			s.RerollFresh = boolp(true)
		}
	}
	return twv1.AgentRunStatus{Phase: phase, Drill: s}
}

// TestDrillCluster drills config/samples/cli_pi.yaml against a real API
// server whose controller the test plays: one run per scenario, each a
// copy of the sample; a scenario whose run exists already is reported and
// the others go on; the table is in the scenarios' order; explain heads a
// drill run with its drill.
func TestDrillCluster(t *testing.T) {
	k := startDrillCluster(t)
	team, clean, slow := k.namespace(t, "team"), k.namespace(t, "clean"), k.namespace(t, "slow")
	playController(t, k.c, piAnswer, team, clean)
	sample := testenv.Path("config", "samples", "cli_pi.yaml")
	fh, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	src, err := readRun(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A run of a drill's name is there already: that scenario is not
	// created, and the others go on.
	old := drillCopy(src, "cycle", team, 60)
	if err := k.c.Create(context.Background(), old); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := k.drill("-f", sample, "--scenario", "all", "-n", team, "--parallel", "3", "--timeout", "2m")
	t.Logf("stderr:\n%s", errOut)
	want := `SCENARIO        EXPECTED                 RESULT           CAUGHT BY                WHERE   NUDGE      REFUSED  REROLL FRESH
healthy         none                     AsExpected       -                        -       -          -        -
identicalLoop   identicalCalls/runaway   Caught           identicalCalls/runaway   call 4  -          yes      yes
cycle           cycles/runaway           not created      -                        -       -          -        -
silentRun       silentRun                AsExpected       -                        -       delivered  -        -
repeatedErrors  repeatedErrors/runaway   Caught           repeatedErrors/runaway   call 4  -          yes      yes
whitespace      degeneration/degenerate  Caught           degeneration/degenerate  -       -          -        yes
repetition      repetition/degenerate    Caught           repetition/degenerate    -       -          -        yes
lengthStop      lengthStop/length        CaughtOtherwise  spend/overspend          -       -          -        -
apiError        agent-error              Caught           agent-error              -       -          -        yes
stall           stall/stalled            Caught           stall/stalled            -       -          -        yes
overspend       spend/overspend          Caught           spend/overspend          -       -          -        -

Notes:
  cycle: AgentRun team/cli-pi-drill-cycle exists already: delete it (kubectl delete agentrun -n team cli-pi-drill-cycle) or let it expire, then drill again
  lengthStop: the spend guard ended it first
`
	if code != 1 || out != want {
		t.Errorf("exit %d, want 1; table:\n%s\nwant:\n%s", code, out, want)
	}
	if !strings.Contains(errOut, "scenario cycle: AgentRun team/cli-pi-drill-cycle exists already") {
		t.Errorf("stderr does not name the run that exists:\n%s", errOut)
	}
	checkDrillRuns(t, k.c, src, team)

	// explain says a drill run is one, in its header.
	var eout, eerr bytes.Buffer
	if code := run([]string{"explain", "cli-pi-drill-identicalloop", "-n", team, "--kubeconfig", k.kubeconfig}, &eout, &eerr); code != 0 ||
		!strings.Contains(eout.String(), "AgentRun team/cli-pi-drill-identicalloop: Faulted\n"+
			"drill identicalLoop: expected identicalCalls/runaway, result Caught (got identicalCalls/runaway at call 4)\n") {
		t.Errorf("explain: exit %d\n%s%s", code, eout.String(), eerr.String())
	}

	// All caught: exit 0; -o json gives the rows.
	code, out, _ = k.drill("-f", sample, "--scenario", "healthy", "-n", clean, "-o", "json", "--ttl", "2h")
	var rows []explain.Drill
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 ||
		rows[0] != (explain.Drill{Run: "cli-pi-drill-healthy", DrillStatus: twv1.DrillStatus{Scenario: "healthy", Result: "AsExpected"}}) {
		t.Errorf("exit %d, json %v:\n%s", code, err, out)
	}
	var healthy twv1.AgentRun
	if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: clean, Name: "cli-pi-drill-healthy"}, &healthy); err != nil ||
		*healthy.Spec.TTLSecondsAfterFinished != 7200 {
		t.Errorf("--ttl 2h: %v %v", err, healthy.Spec.TTLSecondsAfterFinished)
	}

	// A run that does not end in time: timed out, exit 1.
	code, out, _ = k.drill("-f", sample, "--scenario", "stall", "-n", slow, "--timeout", "3s")
	if code != 1 || !strings.Contains(out, "stall     stall/stalled  timed out") ||
		!strings.Contains(out, "stall: AgentRun slow/cli-pi-drill-stall: phase Pending, result Pending when the drill's --timeout passed") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// checkDrillRuns: each run the drill created is the sample but for its
// name, the drill's label, spec.drill and the default TTL.
func checkDrillRuns(t *testing.T, c client.Client, src *twv1.AgentRun, ns string) {
	t.Helper()
	var list twv1.AgentRunList
	if err := c.List(context.Background(), &list, client.InNamespace(ns), client.HasLabels{twv1.LabelDrill}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 11 {
		t.Errorf("%d drill runs, want 11 (every scenario but claude's subagentLoop)", len(list.Items))
	}
	for _, r := range list.Items {
		sc := r.Labels[twv1.LabelDrill]
		if r.Name != drillName(src.Name, sc) || r.Spec.Drill == nil || r.Spec.Drill.Scenario != sc {
			t.Errorf("run %s: label %q, drill %+v", r.Name, sc, r.Spec.Drill)
		}
		if sc != "cycle" && (r.Spec.TTLSecondsAfterFinished == nil || *r.Spec.TTLSecondsAfterFinished != 3600) {
			t.Errorf("run %s: ttl %v, want 3600", r.Name, r.Spec.TTLSecondsAfterFinished)
		}
		if r.Spec.Prompt != src.Spec.Prompt || r.Spec.Format != src.Spec.Format || !reflect.DeepEqual(r.Spec.Guards, src.Spec.Guards) ||
			!reflect.DeepEqual(r.Spec.Template, src.Spec.Template) {
			t.Errorf("run %s: spec is not the sample's", r.Name)
		}
	}
}

// A drill the API server's admission refuses is reported, its run not
// created, with the admission's words: a codex run whose template never
// reads OPENAI_BASE_URL (turnwatch-agentrun-drill).
func TestDrillRefusedAtAdmission(t *testing.T) {
	k := startDrillCluster(t)
	ns := k.namespace(t, "team")
	if err := testenv.InstallSidecarPolicy(context.Background(), k.c); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "codex.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: turnwatch.dev/v1alpha1
kind: AgentRun
metadata: {name: builtin}
spec:
  format: codex
  prompt: hi
  template: {spec: {containers: [{name: agent, image: codex, args: ["codex exec --json hi"]}]}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The policy takes a moment to be enforced.
	err := testenv.WaitFor(context.Background(), 30*time.Second, 200*time.Millisecond, "the drill policy", nil, func() (bool, error) {
		probe := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: twv1.AgentRunSpec{
			Format: twv1.FormatCodex, Prompt: "hi", Drill: &twv1.Drill{Scenario: "healthy"},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "codex"}}}}}}
		return k.c.Create(context.Background(), probe, client.DryRunAll) != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := k.drill("-f", manifest, "--scenario", "identicalLoop", "-n", ns, "--timeout", "30s")
	if code != 1 || !strings.Contains(out, "identicalLoop  identicalCalls/runaway  not created") ||
		!strings.Contains(out, "turnwatch-agentrun-drill") || !strings.Contains(errOut, "OPENAI_BASE_URL") {
		t.Errorf("exit %d:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestDrillJobCluster drills a Job (config/samples/cli_pi.yaml's template,
// labelled for attach) against a real API server whose controller the test
// plays: each scenario's run is the Job's pod template, with the format,
// agent container and guards its labels and annotation give.
func TestDrillJobCluster(t *testing.T) {
	k := startDrillCluster(t)
	team := k.namespace(t, "team")
	playController(t, k.c, piAnswer, team)
	fh, err := os.Open(testenv.Path("config", "samples", "cli_pi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sample, err := readRun(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := sample.Spec.Template.DeepCopy()
	tmpl.Labels = map[string]string{twv1.LabelWatch: "pi", twv1.LabelAgentContainer: "agent", "team": "a"}
	tmpl.Annotations = map[string]string{twv1.AnnotationGuards: `{"maxCostUSD": "1.00", "nudgeDelivery": "file"}`}
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: team},
		Spec: batchv1.JobSpec{Template: *tmpl}}
	b, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(manifest, b, 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := k.drill("-f", manifest, "--scenario", "identicalLoop", "--timeout", "1m")
	want := `SCENARIO       EXPECTED                RESULT  CAUGHT BY               WHERE   NUDGE  REFUSED  REROLL FRESH
identicalLoop  identicalCalls/runaway  Caught  identicalCalls/runaway  call 4  -      yes      yes
`
	if code != 0 || out != want {
		t.Errorf("exit %d; table:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errOut)
	}
	var got twv1.AgentRun
	if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: team, Name: "nightly-drill-identicalloop"}, &got); err != nil {
		t.Fatal(err)
	}
	wantTmpl := sample.Spec.Template.DeepCopy()
	wantTmpl.Labels, wantTmpl.Spec.RestartPolicy = map[string]string{"team": "a"}, corev1.RestartPolicyNever
	if got.Spec.Format != twv1.FormatPi || got.Spec.AgentContainer != "agent" || !reflect.DeepEqual(got.Spec.Guards, sample.Spec.Guards) ||
		got.Spec.Drill == nil || got.Spec.Drill.Scenario != "identicalLoop" || !reflect.DeepEqual(got.Spec.Template, *wantTmpl) {
		t.Errorf("the run is not the Job's template:\n%+v\nwant template\n%+v", got.Spec, *wantTmpl)
	}
}
