package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

func TestDrillName(t *testing.T) {
	long := strings.Repeat("a", 40) + ".team-" + strings.Repeat("b", 30)
	tests := []struct {
		name, scenario, want string
	}{
		{"cli-claude", "identicalLoop", "cli-claude-drill-identicalloop"},
		{"cli-claude", "healthy", "cli-claude-drill-healthy"},
		{strings.Repeat("x", 49), "healthy", strings.Repeat("x", 49) + "-drill-healthy"},          // 63: fits
		{strings.Repeat("x", 50), "healthy", strings.Repeat("x", 40) + "-8ff0d72d-drill-healthy"}, // 64: cut
		{long, "repeatedErrors", ""},
	}
	for _, tt := range tests {
		got := drillName(tt.name, tt.scenario)
		if tt.want != "" && got != tt.want {
			t.Errorf("drillName(%q, %q) = %q, want %q", tt.name, tt.scenario, got, tt.want)
		}
		if len(got) > maxName || !strings.HasSuffix(got, "-drill-"+strings.ToLower(tt.scenario)) {
			t.Errorf("drillName(%q, %q) = %q (%d chars)", tt.name, tt.scenario, got, len(got))
		}
		if errs := append(validation.IsDNS1123Subdomain(got), validation.IsValidLabelValue(got)...); len(errs) > 0 {
			t.Errorf("drillName(%q, %q) = %q: %v", tt.name, tt.scenario, got, errs)
		}
	}
}

// Every scenario of every run gets its own name, however long the runs'
// names and however alike their beginnings.
func TestDrillNameUnique(t *testing.T) {
	base := strings.Repeat("platform-team-agent-", 3)
	seen := map[string]string{}
	for _, name := range []string{"r", base + "claude", base + "codex", base + "claude-2", base[:50], base[:51]} {
		for _, sc := range scriptedmodel.Names() {
			got := drillName(name, sc)
			if prev, dup := seen[got]; dup {
				t.Errorf("%s/%s and %s are both named %q", name, sc, prev, got)
			}
			seen[got] = name + "/" + sc
		}
	}
}

func TestReadRun(t *testing.T) {
	const run = "apiVersion: turnwatch.dev/v1alpha1\nkind: AgentRun\nmetadata: {name: r}\nspec: {format: claude, prompt: hi, template: {spec: {containers: [{name: agent, image: a}]}}}\n"
	tests := []struct {
		name, manifest, refused string
	}{
		{"one run", run, ""},
		{"comments and separators around it", "# a comment\n---\n" + run + "---\n# done\n", ""},
		{"json", `{"apiVersion":"turnwatch.dev/v1alpha1","kind":"AgentRun","metadata":{"name":"r"},"spec":{"format":"pi","prompt":"hi"}}`, ""},
		{"two runs", run + "---\n" + run, "holds 2 objects"},
		{"nothing", "# nothing\n", "holds 0 objects"},
		{"another kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p}\n",
			`kind "Deployment" of apiVersion "apps/v1"; the drill takes an AgentRun (turnwatch.dev/v1alpha1), or a Job (batch/v1), CronJob (batch/v1), Pod (v1) or Sandbox (agents.x-k8s.io/v1alpha1, agents.x-k8s.io/v1beta1)`},
		{"a Sandbox of another version", "apiVersion: agents.x-k8s.io/v1beta2\nkind: Sandbox\nmetadata: {name: p}\n", `kind "Sandbox" of apiVersion "agents.x-k8s.io/v1beta2"`},
		{"another version", strings.Replace(run, "v1alpha1", "v1", 1), `apiVersion "turnwatch.dev/v1"`},
		{"an unknown field", strings.Replace(run, "prompt: hi", "prompt: hi, promt: typo", 1), `unknown field "promt"`},
	}
	for _, tt := range tests {
		got, err := readRun(strings.NewReader(tt.manifest))
		switch {
		case tt.refused == "" && (err != nil || got.Name != "r"):
			t.Errorf("%s: %v %+v", tt.name, err, got)
		case tt.refused != "" && (!isRefusal(err) || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("%s: error %v, want a refusal saying %q", tt.name, err, tt.refused)
		}
	}
}

// The samples are what a team drills: each reads as it is.
func TestReadRunSamples(t *testing.T) {
	for _, f := range []string{"cli_claude", "cli_codex", "cli_gemini", "cli_opencode", "cli_pi"} {
		fh, err := os.Open(testenv.Path("config", "samples", f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		run, err := readRun(fh)
		fh.Close()
		if err != nil || checkRun(run) != nil {
			t.Errorf("%s: %v %v", f, err, checkRun(run))
		}
	}
}

func TestCheckRun(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(r *twv1.AgentRun)
		refused string
	}{
		{"named format", func(r *twv1.AgentRun) {}, ""},
		{"no name", func(r *twv1.AgentRun) { r.Name = "" }, "no metadata.name"},
		{"format unset", func(r *twv1.AgentRun) { r.Spec.Format = "" }, `spec.format is ""`},
		{"format auto", func(r *twv1.AgentRun) { r.Spec.Format = twv1.FormatAuto }, `spec.format is "auto": a drill needs a named format (claude, codex, gemini, opencode, pi)`},
		{"a drill", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "healthy"} }, "a drill already"},
	}
	for _, tt := range tests {
		r := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: twv1.AgentRunSpec{Format: twv1.FormatClaude}}
		tt.mutate(r)
		err := checkRun(r)
		if (tt.refused == "") != (err == nil) || err != nil && (!isRefusal(err) || !strings.Contains(err.Error(), tt.refused)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.refused)
		}
	}
}

func TestPickScenarios(t *testing.T) {
	names := func(scs []scriptedmodel.Scenario) string {
		var out []string
		for _, sc := range scs {
			out = append(out, sc.Name)
		}
		return strings.Join(out, ",")
	}
	all := strings.Join(scriptedmodel.Names(), ",")
	tests := []struct {
		format, pick, want, refused string
	}{
		{"claude", "all", all, ""},
		{"codex", "all", strings.TrimSuffix(all, ",subagentLoop"), ""},
		{"pi", "stall", "stall", ""},
		{"claude", "subagentLoop", "subagentLoop", ""},
		{"codex", "subagentLoop", "", "plays only to claude"},
		{"pi", "meltdown", "", `unknown scenario "meltdown"`},
		{"pi", "Stall", "", `unknown scenario "Stall"`},
	}
	for _, tt := range tests {
		got, err := pickScenarios(tt.format, tt.pick)
		if names(got) != tt.want || (tt.refused == "") != (err == nil) || err != nil && (!isRefusal(err) || !strings.Contains(err.Error(), tt.refused)) {
			t.Errorf("%s %s: %q %v, want %q %q", tt.format, tt.pick, names(got), err, tt.want, tt.refused)
		}
	}
}

// A copy is the run as written but for its name, namespace, the drill's
// label, spec.drill and the TTL; the run read is left as it was.
func TestDrillCopy(t *testing.T) {
	src := &twv1.AgentRun{
		TypeMeta: metav1.TypeMeta{APIVersion: "turnwatch.dev/v1alpha1", Kind: "AgentRun"},
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "7", UID: "u",
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "b"}},
		Spec:   twv1.AgentRunSpec{Format: twv1.FormatPi, Prompt: "p", Guards: &twv1.Guards{MaxCostUSD: strp("1.00")}},
		Status: twv1.AgentRunStatus{Phase: twv1.RunFaulted},
	}
	was := src.DeepCopy()
	got := drillCopy(src, "identicalLoop", "drills", 3600)
	if !reflect.DeepEqual(src, was) {
		t.Errorf("the run read changed: %+v", src)
	}
	if got.Name != "r-drill-identicalloop" || got.Namespace != "drills" || got.ResourceVersion != "" || got.UID != "" ||
		!reflect.DeepEqual(got.Labels, map[string]string{"team": "a", twv1.LabelDrill: "identicalLoop"}) ||
		!reflect.DeepEqual(got.Annotations, src.Annotations) || got.Status.Phase != "" {
		t.Errorf("metadata %+v status %+v", got.ObjectMeta, got.Status)
	}
	if got.Spec.Drill == nil || got.Spec.Drill.Scenario != "identicalLoop" || got.Spec.TTLSecondsAfterFinished == nil || *got.Spec.TTLSecondsAfterFinished != 3600 {
		t.Errorf("drill %+v ttl %v", got.Spec.Drill, got.Spec.TTLSecondsAfterFinished)
	}
	spec := got.Spec.DeepCopy()
	spec.Drill, spec.TTLSecondsAfterFinished = nil, nil
	if !reflect.DeepEqual(*spec, src.Spec) {
		t.Errorf("spec changed beyond the drill:\n%+v\n%+v", *spec, src.Spec)
	}
	*got.Spec.Guards.MaxCostUSD = "9"
	if *src.Spec.Guards.MaxCostUSD != "1.00" {
		t.Error("the copy shares the run's guards")
	}
}

func TestDrillNamespace(t *testing.T) {
	src := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}}
	if ns, err := drillNamespace(drillFlags{}, src); ns != "team" || err != nil {
		t.Errorf("the manifest's namespace: %q %v", ns, err)
	}
	if ns, err := drillNamespace(drillFlags{namespace: "team"}, src); ns != "team" || err != nil {
		t.Errorf("-n the manifest's namespace: %q %v", ns, err)
	}
	if _, err := drillNamespace(drillFlags{namespace: "other"}, src); !isRefusal(err) || !strings.Contains(err.Error(), "namespace team is not -n other") {
		t.Errorf("-n another namespace: %v", err)
	}
}

func boolp(b bool) *bool { return &b }

func strp(s string) *string { return &s }

// drillOf reads status.drill; before it is set, the row expects the
// scenario's verdict for the run's format and is Pending.
func TestDrillOf(t *testing.T) {
	run := func(format twv1.Format, scenario string, s *twv1.DrillStatus) *twv1.AgentRun {
		r := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: twv1.AgentRunSpec{Format: format}}
		if scenario != "" {
			r.Spec.Drill = &twv1.Drill{Scenario: scenario}
		}
		r.Status.Drill = s
		return r
	}
	if d := drillOf(run(twv1.FormatClaude, "", nil)); d != nil {
		t.Errorf("a run that is no drill: %+v", d)
	}
	tests := []struct {
		name string
		run  *twv1.AgentRun
		want explain.Drill
	}{
		{"pending", run(twv1.FormatClaude, "identicalLoop", nil),
			explain.Drill{Run: "r", DrillStatus: twv1.DrillStatus{Scenario: "identicalLoop", Result: "Pending", Expected: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}}}},
		{"pending, what the stream hides the model's side shows", run(twv1.FormatCodex, "whitespace", nil),
			explain.Drill{Run: "r", DrillStatus: twv1.DrillStatus{Scenario: "whitespace", Result: "Pending", Expected: twv1.DrillVerdict{Class: "degenerate", Detector: "degeneration"}}}},
		{"caught", run(twv1.FormatClaude, "identicalLoop", &twv1.DrillStatus{Scenario: "identicalLoop",
			Expected: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, Result: twv1.DrillCaught,
			Got: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, AtCall: 4, CallRefused: boolp(true), RerollFresh: boolp(true)}),
			explain.Drill{Run: "r", DrillStatus: twv1.DrillStatus{Scenario: "identicalLoop", Result: "Caught", Expected: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"},
				Got: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, AtCall: 4, CallRefused: boolp(true), RerollFresh: boolp(true)}}},
		{"missed", run(twv1.FormatPi, "stall", &twv1.DrillStatus{Scenario: "stall", Expected: twv1.DrillVerdict{Class: "stalled", Detector: "stall"},
			Result: twv1.DrillMissed, Note: "n"}),
			explain.Drill{Run: "r", DrillStatus: twv1.DrillStatus{Scenario: "stall", Result: "Missed", Expected: twv1.DrillVerdict{Class: "stalled", Detector: "stall"}, Note: "n"}, Failed: true}},
		{"status without a result yet", run(twv1.FormatPi, "healthy", &twv1.DrillStatus{Scenario: "healthy"}),
			explain.Drill{Run: "r", DrillStatus: twv1.DrillStatus{Scenario: "healthy", Result: "Pending"}}},
	}
	for _, tt := range tests {
		if got := drillOf(tt.run); !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, *got, tt.want)
		}
	}
}

func TestDrillEnded(t *testing.T) {
	tests := []struct {
		phase  twv1.RunPhase
		result twv1.DrillResult
		want   bool
	}{
		{twv1.RunFaulted, twv1.DrillCaught, true},
		{twv1.RunSucceeded, twv1.DrillAsExpected, true},
		{twv1.RunAborted, twv1.DrillMissed, true},
		{twv1.RunFaulted, twv1.DrillPending, false},
		{twv1.RunFaulted, "", false},
		{twv1.RunRunning, twv1.DrillCaught, false},
		{"", "", false},
	}
	for _, tt := range tests {
		r := &twv1.AgentRun{Status: twv1.AgentRunStatus{Phase: tt.phase, Drill: &twv1.DrillStatus{Result: tt.result}}}
		if got := drillEnded(r); got != tt.want {
			t.Errorf("%s %s: %v, want %v", tt.phase, tt.result, got, tt.want)
		}
	}
	if drillEnded(&twv1.AgentRun{Status: twv1.AgentRunStatus{Phase: twv1.RunFaulted}}) {
		t.Error("ended without status.drill")
	}
}

// A drill a budget holds times out saying which budget holds it.
func TestTimedOutNote(t *testing.T) {
	held := &twv1.AgentRun{Status: twv1.AgentRunStatus{Conditions: []metav1.Condition{{Type: twv1.PolicyConditionBudgetExhausted, Status: metav1.ConditionTrue,
		Message: "the first turn waits: the budget of TurnPolicy/team is exhausted: spent 1.53 of 1.00 USD"}}}}
	note := timedOutNote("ns/r-drill-healthy", held, "Pending")
	for _, want := range []string{"AgentRun ns/r-drill-healthy: phase Pending, result Pending", "held by a budget: the first turn waits: the budget of TurnPolicy/team is exhausted"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}
	running := &twv1.AgentRun{Status: twv1.AgentRunStatus{Phase: twv1.RunRunning}}
	if note := timedOutNote("ns/r", running, "Pending"); strings.Contains(note, "budget") {
		t.Errorf("note %q names a budget", note)
	}
}

// drillRows are a drill's rows of each kind: caught at a call with its
// nudge, refusal and reroll; blind with a note; false alarm; timed out;
// not created.
var drillRows = []explain.Drill{
	{DrillStatus: twv1.DrillStatus{Scenario: "healthy", Result: "AsExpected"}},
	{DrillStatus: twv1.DrillStatus{Scenario: "identicalLoop", Expected: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, Result: "Caught",
		Got: twv1.DrillVerdict{Class: "runaway", Detector: "identicalCalls"}, AtCall: 4, NudgeDelivered: boolp(true), CallRefused: boolp(true), RerollFresh: boolp(true)}},
	{DrillStatus: twv1.DrillStatus{Scenario: "silentRun", Expected: twv1.DrillVerdict{Detector: "silentRun"}, Result: "AsExpected", NudgeDelivered: boolp(false)}},
	{DrillStatus: twv1.DrillStatus{Scenario: "whitespace", Result: "AsExpected", Note: "codex exec --json prints whole messages"}},
	{DrillStatus: twv1.DrillStatus{Scenario: "lengthStop", Expected: twv1.DrillVerdict{Class: "agent-error"}, Result: "FalseAlarm", Got: twv1.DrillVerdict{Class: "length", Detector: "lengthStop"},
		CallRefused: boolp(false), RerollFresh: boolp(false)}, Failed: true},
	withoutResult(explain.Drill{DrillStatus: twv1.DrillStatus{Scenario: "stall", Expected: twv1.DrillVerdict{Class: "stalled", Detector: "stall"}, Result: "Pending"}}, resultTimedOut, "phase Running"),
	withoutResult(explain.Drill{DrillStatus: twv1.DrillStatus{Scenario: "apiError", Expected: twv1.DrillVerdict{Class: "agent-error"}}}, resultNotCreated, "denied by turnwatch-agentrun-drill"),
}

func TestDrillTable(t *testing.T) {
	var b bytes.Buffer
	if err := writeDrillTable(&b, drillRows); err != nil {
		t.Fatal(err)
	}
	want := `SCENARIO       EXPECTED                RESULT       CAUGHT BY               WHERE   NUDGE          REFUSED  REROLL FRESH
healthy        none                    AsExpected   -                       -       -              -        -
identicalLoop  identicalCalls/runaway  Caught       identicalCalls/runaway  call 4  delivered      yes      yes
silentRun      silentRun               AsExpected   -                       -       not delivered  -        -
whitespace     none                    AsExpected   -                       -       -              -        -
lengthStop     agent-error             FalseAlarm   lengthStop/length       -       -              no       no
stall          stall/stalled           timed out    -                       -       -              -        -
apiError       agent-error             not created  -                       -       -              -        -

Notes:
  whitespace: codex exec --json prints whole messages
  stall: phase Running
  apiError: denied by turnwatch-agentrun-drill
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := writeDrillTable(&b, drillRows[:2]); err != nil || strings.Contains(b.String(), "Notes") {
		t.Errorf("notes without a note: %v\n%s", err, b.String())
	}
}

func TestDrillJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writeDrillJSON(&b, drillRows); err != nil {
		t.Fatal(err)
	}
	var got []explain.Drill
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || !reflect.DeepEqual(got, drillRows) {
		t.Errorf("%v\n%s", err, b.String())
	}
	for _, want := range []string{`"result": "timed out"`, `"failed": true`, `"atCall": 4`, `"nudgeDelivered": false`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("json lacks %s:\n%s", want, b.String())
		}
	}
	// status.drill's fields inline into the row: a row keeps its names.
	var keys []map[string]any
	if err := json.Unmarshal(b.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run", "scenario", "expected", "result", "got", "atCall", "nudgeDelivered", "callRefused", "rerollFresh", "failed"} {
		if _, ok := keys[1][k]; !ok {
			t.Errorf("row lacks %q: %v", k, keys[1])
		}
	}
	b.Reset()
	if err := writeDrillJSON(&b, nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("no rows: %q %v", b.String(), err)
	}
}

func TestDrillExit(t *testing.T) {
	tests := []struct {
		name string
		rows []explain.Drill
		want int
	}{
		{"caught, caught otherwise, as expected", []explain.Drill{drillRows[0], drillRows[1], {DrillStatus: twv1.DrillStatus{Result: "CaughtOtherwise"}}}, 0},
		{"a false alarm", drillRows[:5], 1},
		{"missed", []explain.Drill{*drillOf(&twv1.AgentRun{Spec: twv1.AgentRunSpec{Drill: &twv1.Drill{Scenario: "stall"}},
			Status: twv1.AgentRunStatus{Drill: &twv1.DrillStatus{Result: twv1.DrillMissed}}})}, 1},
		{"timed out", []explain.Drill{drillRows[0], drillRows[5]}, 1},
		{"not created", []explain.Drill{drillRows[6]}, 1},
		{"none", nil, 0},
	}
	for _, tt := range tests {
		if got := drillExit(tt.rows); got != tt.want {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.want)
		}
	}
}

// What the drill refuses before it talks to a cluster: exit 2, saying why.
func TestDrillRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	auto := write("auto.yaml", "apiVersion: turnwatch.dev/v1alpha1\nkind: AgentRun\nmetadata: {name: r}\nspec: {format: auto, prompt: hi}\n")
	codex := testenv.Path("config", "samples", "cli_codex.yaml")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"drill"}, "usage: kubectl turnwatch drill"},
		{[]string{"drill", "-f", codex, "-o", "yaml"}, "usage: kubectl turnwatch drill"},
		{[]string{"drill", "-f", codex, "extra"}, "usage: kubectl turnwatch drill"},
		{[]string{"drill", "--bogus"}, "usage: kubectl turnwatch drill"},
		{[]string{"drill", "-f", auto}, `spec.format is "auto"`},
		{[]string{"drill", "-f", codex, "--scenario", "subagentLoop"}, "plays only to claude"},
		{[]string{"drill", "-f", codex, "--parallel", "0"}, "--parallel 0"},
		{[]string{"drill", "-f", codex, "--ttl", "30s"}, "--ttl 30s"},
		{[]string{"drill", "-f", dir + "/none.yaml"}, "no such file"},
		{[]string{"drill", "-f", "-"}, "the drill takes one: an AgentRun"}, // stdin: two runs
	}
	was := stdin
	defer func() { stdin = was }()
	stdin = strings.NewReader("apiVersion: turnwatch.dev/v1alpha1\nkind: AgentRun\n---\napiVersion: turnwatch.dev/v1alpha1\nkind: AgentRun\n")
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tt.want) || out.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}
