package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
)

// drillFlags are `kubectl turnwatch drill`'s flags.
type drillFlags struct {
	kubeconfig, context, namespace string
	file, scenario, output         string
	timeout, ttl                   time.Duration
	parallel                       int
}

// Defaults and bounds of the drill's flags.
const (
	defaultDrillTimeout  = 15 * time.Minute
	defaultDrillTTL      = time.Hour
	defaultDrillParallel = 4
	// minDrillTTL keeps a finished run long enough for the command to read
	// its result.
	minDrillTTL = time.Minute
	// drillPoll is how often a run is read while the command waits.
	drillPoll = 2 * time.Second
)

// stdin is where -f - reads the manifest.
var stdin io.Reader = os.Stdin

const drillUsageText = `usage: kubectl turnwatch drill -f RUN.yaml [flags]
       kubectl turnwatch drill -f WORKLOAD.yaml [flags]

Proves the guards on the run's own image (docs/drill.md): creates a copy of
the AgentRun of RUN.yaml ("-": stdin) per scenario of the scripted model,
named RUN-drill-SCENARIO, whose agent talks to the scripted model in its Pod
instead of a real one (no tokens, no network); waits for each to end; and
prints what each scenario expected against what happened. Exit 0 when every
guard caught what it should; 1 when one missed, raised a false alarm, or a
run was not created or did not end in time; 2 for a manifest or flag it
cannot use.

WORKLOAD.yaml holds a workload labelled for attach (docs/attach.md), one of
%s.
Its pod template is drilled as an AgentRun's, named after the workload, with
the format of its label turnwatch.dev/watch (a named one: not auto), the
agent container of its label turnwatch.dev/agent-container (default: the
first), and the guards of its annotation turnwatch.dev/guards.

flags:
`

func newDrillFlagSet(f *drillFlags, stderr io.Writer) *flag.FlagSet {
	fs := newKubeFlagSet("kubectl turnwatch drill", stderr, &f.kubeconfig, &f.context, &f.namespace,
		"the namespace of the drill's runs (default: the manifest's, then the context's)")
	fs.StringVar(&f.file, "filename", "", `the manifest holding one AgentRun or workload ("-": stdin)`)
	fs.StringVar(&f.file, "f", "", "short for --filename")
	fs.StringVar(&f.scenario, "scenario", scenarioAll, "the scenario to play, or all: every scenario that applies to the run's format")
	fs.DurationVar(&f.timeout, "timeout", defaultDrillTimeout, "how long the whole drill may take")
	fs.IntVar(&f.parallel, "parallel", defaultDrillParallel, "how many of the drill's runs go at once")
	fs.DurationVar(&f.ttl, "ttl", defaultDrillTTL, "how long a drill run is kept after it ends (spec.ttlSecondsAfterFinished; at least 1m)")
	fs.StringVar(&f.output, "output", "text", "text (a table, for a person) or json (the rows, for tools)")
	fs.StringVar(&f.output, "o", "text", "short for --output")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), drillUsageText, workloadKinds())
		fs.PrintDefaults()
	}
	return fs
}

// runDrill is `kubectl turnwatch drill`.
func runDrill(args []string, stdout, stderr io.Writer) int {
	var f drillFlags
	fs := newDrillFlagSet(&f, stderr)
	pos, code, done := parseCommand(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 || f.file == "" || (f.output != "text" && f.output != "json") {
		fs.Usage()
		return 2
	}
	runs, err := planDrill(f)
	if err != nil {
		fmt.Fprintln(stderr, "kubectl turnwatch drill:", err)
		if isRefusal(err) {
			return 2
		}
		return 1
	}
	c, err := kubeClientFor(f)
	if err != nil {
		fmt.Fprintln(stderr, "kubectl turnwatch drill:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	rows := drillRuns(ctx, c, runs, f.parallel, progress(stderr))
	write := writeDrillTable
	if f.output == "json" {
		write = writeDrillJSON
	}
	if err := write(stdout, rows); err != nil {
		return 1
	}
	return drillExit(rows)
}

// planDrill checks the flags and the manifest and makes the runs: one copy
// of the manifest's run per scenario, in the scenarios' order.
func planDrill(f drillFlags) ([]*twv1.AgentRun, error) {
	switch {
	case f.parallel < 1:
		return nil, refusef("--parallel %d: at least 1", f.parallel)
	case f.timeout <= 0:
		return nil, refusef("--timeout %v: more than 0", f.timeout)
	case f.ttl < minDrillTTL || f.ttl.Seconds() > float64(1<<31-1):
		return nil, refusef("--ttl %v: from %v (the command reads each run after it ends) to 68 years", f.ttl, minDrillTTL)
	}
	src, err := readManifest(f.file)
	if err != nil {
		return nil, err
	}
	if err := checkRun(src); err != nil {
		return nil, err
	}
	scenarios, err := pickScenarios(string(src.Spec.Format), f.scenario)
	if err != nil {
		return nil, err
	}
	ns, err := drillNamespace(f, src)
	if err != nil {
		return nil, err
	}
	runs := make([]*twv1.AgentRun, len(scenarios))
	for i, sc := range scenarios {
		runs[i] = drillCopy(src, sc.Name, ns, int32(f.ttl.Seconds()))
	}
	return runs, nil
}

func readManifest(file string) (*twv1.AgentRun, error) {
	if file == "-" {
		return readRun(stdin)
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, refusal{err.Error()}
	}
	defer fh.Close()
	return readRun(fh)
}

// drillNamespace is -n, else the manifest's namespace, else the context's;
// -n and a manifest's namespace that differ are refused, as kubectl does.
func drillNamespace(f drillFlags, src *twv1.AgentRun) (string, error) {
	switch {
	case f.namespace != "" && src.Namespace != "" && f.namespace != src.Namespace:
		return "", refusef("the manifest's namespace %s is not -n %s", src.Namespace, f.namespace)
	case f.namespace == "" && src.Namespace != "":
		return src.Namespace, nil
	}
	ns, _, err := clientConfig(f.kubeconfig, f.context, f.namespace).Namespace()
	return ns, err
}

func kubeClientFor(f drillFlags) (client.Client, error) {
	cfg, err := clientConfig(f.kubeconfig, f.context, f.namespace).ClientConfig()
	if err != nil {
		return nil, err
	}
	return newClient(cfg)
}

// progress prints what the drill does as it goes, one line each, to w
// (stderr: stdout holds the table).
func progress(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "kubectl turnwatch drill: "+format+"\n", args...)
	}
}

// drillRuns creates the runs, parallel at a time in their order, and waits
// for each to end or ctx to. Its rows are in the runs' order.
func drillRuns(ctx context.Context, c client.Client, runs []*twv1.AgentRun, parallel int, say func(string, ...any)) []explain.Drill {
	rows := make([]explain.Drill, len(runs))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, run := range runs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			rows[i] = withoutResult(*drillOf(run), resultTimedOut, "not started: the drill's --timeout passed first")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			rows[i] = drillOne(ctx, c, run, say)
		}()
	}
	wg.Wait()
	return rows
}

// drillOne creates one run and waits for it to end.
func drillOne(ctx context.Context, c client.Client, run *twv1.AgentRun, say func(string, ...any)) explain.Drill {
	row, key, start := *drillOf(run), client.ObjectKeyFromObject(run), time.Now()
	if err := c.Create(ctx, run.DeepCopy()); err != nil {
		if ctx.Err() != nil {
			return withoutResult(row, resultTimedOut, "not created: the drill's --timeout passed first")
		}
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("AgentRun %s exists already: delete it (kubectl delete agentrun -n %s %s) or let it expire, then drill again",
				key, key.Namespace, key.Name)
		}
		say("scenario %s: %v", row.Scenario, err)
		return withoutResult(row, resultNotCreated, err.Error())
	}
	say("created AgentRun %s (scenario %s)", key, row.Scenario)
	last := run
	err := wait.PollUntilContextCancel(ctx, drillPoll, true, func(ctx context.Context) (bool, error) {
		var got twv1.AgentRun
		if err := c.Get(ctx, key, &got); err != nil {
			if apierrors.IsNotFound(err) {
				return false, err
			}
			return false, nil // the API may be back on the next look
		}
		last = &got
		return drillEnded(&got), nil
	})
	row = *drillOf(last)
	switch {
	case apierrors.IsNotFound(err):
		row = withoutResult(row, resultDeleted, fmt.Sprintf("AgentRun %s was deleted before it ended", key))
	case err != nil:
		row = withoutResult(row, resultTimedOut, timedOutNote(key.String(), last, row.Result))
	}
	say("%s: %s after %v", key, row.Result, time.Since(start).Round(time.Second))
	return row
}

// timedOutNote says where a drill run stood when --timeout passed, and,
// when a budget held it (a drill is a run: docs/drill.md#budgets), which.
func timedOutNote(key string, run *twv1.AgentRun, result twv1.DrillResult) string {
	note := fmt.Sprintf("AgentRun %s: phase %s, result %s when the drill's --timeout passed",
		key, orPending(string(run.Status.Phase)), result)
	if c := meta.FindStatusCondition(run.Status.Conditions, twv1.PolicyConditionBudgetExhausted); c != nil && c.Status == metav1.ConditionTrue {
		note += "; held by a budget: " + c.Message
	}
	return note
}

func orPending(phase string) string {
	if phase == "" {
		return string(twv1.RunPending)
	}
	return phase
}
