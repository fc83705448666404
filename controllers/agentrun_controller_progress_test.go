package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/internal/testenv"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// sidecarOf is a client with the credential the kubelet gives pod's
// sidecar: a token of the Pod's service account bound to the Pod (nil: a
// token of that account bound to nothing).
func sidecarOf(t testing.TB, ns, account string, pod *corev1.Pod) client.Client {
	t.Helper()
	c, err := client.New(testenv.TokenConfig(restConfig, podToken(t, ns, account, pod, 0)), client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// podToken is the token the kubelet would project into pod (nil: a token
// bound to nothing) running as account: only a node mints it
// (turnwatch-sidecar-token); seconds 0 is the API server's default.
func podToken(t testing.TB, ns, account string, pod *corev1.Pod, seconds int64) string {
	t.Helper()
	node, err := testenv.Node(context.Background(), testEnv, restConfig)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	eventually(t, "the node mints a token of "+account, func() (err error) {
		token, err = testenv.PodToken(context.Background(), node, ns, account, pod, seconds)
		return err
	})
	return token
}

// reportProgress sends what the sidecar sends: one merge patch of the run's
// status with the progress fields.
func reportProgress(c client.Client, ns, run, body string) error {
	obj := &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: run}}
	return c.Status().Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(body)))
}

// runNotWritten checks that nobody writes the run again after the
// reported copy (a progress report costs the controller no write).
func runNotWritten(t *testing.T, reported *twv1.AgentRun) {
	t.Helper()
	consistently(t, "no write of the run after the report", 3*time.Second, func() error {
		run, err := getRun(reported.Namespace, reported.Name)
		if err != nil {
			return err
		}
		if run.ResourceVersion != reported.ResourceVersion {
			a, _ := json.Marshal(reported)
			b, _ := json.Marshal(run)
			return fmt.Errorf("the run was written again:\n%s\n%s", a, b)
		}
		return nil
	})
}

// withRunUID puts a run's UID into a progress report, as the sidecar does.
func withRunUID(body, uid string) string {
	return strings.Replace(body, `"progress":{`, `"progress":{"runUID":`+strconv.Quote(uid)+`,`, 1)
}

func progressBody(total int64, totalCost, turn string, steps int64, cost string) string {
	return fmt.Sprintf(`{"status":{"steps":%d,"costUSD":%q,"progress":{"turn":%q,"steps":%d,"costUSD":%q,"time":%q}}}`,
		total, totalCost, turn, steps, cost, time.Now().UTC().Format(time.RFC3339))
}

// The shipped policy turnwatch-sidecar-run-progress, on the real API
// server: a sidecar's token writes the progress fields of its own run's
// current turn, and nothing else.
func TestRunProgressPolicy(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	mine, theirs := runningRun(t, newRun(ns, "mine")), runningRun(t, newRun(ns, "theirs"))
	sidecar := sidecarOf(t, ns, mine.Spec.ServiceAccountName, mine)
	mineRun, err := getRun(ns, "mine")
	if err != nil {
		t.Fatal(err)
	}
	uid := string(mineRun.UID)

	// The policy and the binding the manager made take a moment to load:
	// wait for a refusal of a patch that changes nothing if it is let
	// through, then for the own report (RBAC).
	eventually(t, "the policy loaded", func() error {
		if err := reportProgress(sidecar, ns, "theirs", `{}`); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "turnwatch-sidecar-run-progress") {
			return fmt.Errorf("an empty patch of another run: want Forbidden by the policy, got %v", err)
		}
		return nil
	})
	eventually(t, "the own run's progress taken", func() error {
		return reportProgress(sidecar, ns, "mine", withRunUID(progressBody(5, "0.25", "mine-0", 5, "0.25"), uid))
	})
	run, err := getRun(ns, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status.Steps != 5 || run.Status.CostUSD != "0.25" || run.Status.Progress == nil || run.Status.Progress.Turn != "mine-0" {
		t.Fatalf("after the own report: %+v", run.Status)
	}

	refused := []struct {
		name   string
		client client.Client
		run    string
		body   string
		want   string
	}{
		{"another run", sidecar, "theirs", withRunUID(progressBody(7, "0.3", "theirs-0", 7, "0.3"), uid),
			"takes progress only from the sidecar of its current turn (theirs-0)"},
		{"another run, changing nothing", sidecar, "theirs", `{}`, "bound to Pod mine-0"},
		{"a token bound to no Pod", sidecarOf(t, ns, mine.Spec.ServiceAccountName, nil), "mine",
			progressBody(6, "0.3", "mine-0", 6, "0.3"), "bound to no Pod"},
		{"a non-progress field", sidecar, "mine", `{"status":{"phase":"Succeeded"}}`, "also changes status.phase"},
		{"the turns list", sidecar, "mine", `{"status":{"turns":null}}`, "also changes status.turns"},
		{"a decrease of steps", sidecar, "mine", withRunUID(progressBody(4, "0.25", "mine-0", 4, "0.25"), uid), "never go down"},
		{"a decrease of cost", sidecar, "mine", withRunUID(progressBody(5, "0.2", "mine-0", 5, "0.2"), uid), "never go down"},
		{"a report that drops the run's UID", sidecar, "mine", strings.Replace(progressBody(6, "0.3", "mine-0", 6, "0.3"), `"progress":{`, `"progress":{"runUID":null,`, 1), "the UID of that run in status.progress.runUID"},
		{"a sidecar of an earlier run of the same name", sidecar, "mine", withRunUID(progressBody(6, "0.3", "mine-0", 6, "0.3"), "an-earlier-uid"),
			"a sidecar of an earlier run of the same name is refused"},
		{"a report naming another turn", sidecar, "mine", withRunUID(progressBody(9, "0.5", "theirs-0", 9, "0.5"), uid), "names its own turn"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			err := reportProgress(c.client, ns, c.run, c.body)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want Forbidden, got %v", err)
			}
			if err := containsAll(err.Error(), "turnwatch-sidecar-run-progress", c.want); err != nil {
				t.Error(err)
			}
		})
	}
	_ = theirs

	// A finished run takes no report: cancel it, then report.
	if err := k8s.Patch(context.Background(), &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))); err != nil {
		t.Fatal(err)
	}
	runPhase(t, ns, "mine", twv1.RunAborted)
	err = reportProgress(sidecar, ns, "mine", withRunUID(progressBody(50, "5", "mine-0", 50, "5"), uid))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a report on a finished run: want Forbidden, got %v", err)
	}
	// The turn is settled first, so the run names no current turn.
	if err := containsAll(err.Error(), "none running"); err != nil {
		t.Error(err)
	}
}

// A sidecar's report is the one write: the controller folds it without
// writing the run back, the turn's own counts wait for its end, and the
// run's final figures are its turns' own.
func TestRunProgressOneWrite(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	runningRun(t, newRun(ns, "one"))

	if err := reportProgress(k8s, ns, "one", progressBody(4, "0.20", "one-0", 4, "0.2")); err != nil {
		t.Fatal(err)
	}
	reported, err := getRun(ns, "one")
	if err != nil {
		t.Fatal(err)
	}
	runNotWritten(t, reported)
	if turn, _ := getTurn(ns, "one-0"); turn.Status.Steps != 0 {
		t.Errorf("the turn's own counts were written while it runs: %d steps", turn.Status.Steps)
	}

	playSidecar(t, ns, "one-0", finishedCond(summary(6, "0.3")))
	run := runPhase(t, ns, "one", twv1.RunSucceeded)
	turn, _ := getTurn(ns, "one-0")
	if turn.Status.Steps != 6 || run.Status.Steps != 6 || run.Status.CostUSD != "0.30" || run.Status.Turns[0].Steps != 6 {
		t.Errorf("settled: turn %d %s, run %+v", turn.Status.Steps, turn.Status.CostUSD, run.Status)
	}
}

// A reroll's sidecar starts from the earlier turns' totals, so the sum the
// controller makes equals what the sidecar wrote: no fight over the run.
func TestRunProgressAfterReroll(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "again"))
	waitPod(t, ns, "again-0")
	playSidecar(t, ns, "again-0", condition(protocol.ConditionProgress, protocol.ReasonRunning, `{"steps":3,"costUSD":"0.1"}`))
	playSidecar(t, ns, "again-0", trip(monitor.DetectorIdenticalCalls, "repeated an identical tool call 4 times"))
	waitPod(t, ns, "again-1")
	turn1, err := getTurn(ns, "again-1")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := getPod(ns, "again-1")
	if err != nil {
		t.Fatal(err)
	}
	if turn1.Spec.PriorSteps != 3 || turn1.Spec.PriorCostUSD != "0.10" ||
		sidecarEnv(pod)[protocol.EnvPriorSteps] != "3" || sidecarEnv(pod)[protocol.EnvRunName] != "again" {
		t.Fatalf("the reroll is not told the earlier turns: spec %+v", turn1.Spec)
	}
	eventually(t, "the run shows the reroll", func() error {
		run, err := getRun(ns, "again")
		if err != nil || len(run.Status.Turns) != 2 {
			return fmt.Errorf("%v %+v", err, run)
		}
		return nil
	})
	if err := reportProgress(k8s, ns, "again", progressBody(3+2, "0.15", "again-1", 2, "0.05")); err != nil {
		t.Fatal(err)
	}
	reported, _ := getRun(ns, "again")
	runNotWritten(t, reported)
}

// A turn that settles without its sidecar's summary (the run cancelled)
// keeps the counts its sidecar last reported to the run: neither the turn's
// nor the run's go back.
func TestRunProgressSurvivesAbort(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	runningRun(t, newRun(ns, "held"))
	if err := reportProgress(k8s, ns, "held", progressBody(9, "0.50", "held-0", 9, "0.5")); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Patch(context.Background(), &twv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))); err != nil {
		t.Fatal(err)
	}
	turn := turnSettled(t, ns, "held-0")
	run := runPhase(t, ns, "held", twv1.RunAborted)
	// The turn's cost is written as monitor.Money writes it: "0.5" reads "0.50".
	if turn.Status.Steps != 9 || turn.Status.CostUSD != "0.50" || run.Status.Steps != 9 || run.Status.CostUSD != "0.50" {
		t.Errorf("after the abort: turn %d %s, run %d %s", turn.Status.Steps, turn.Status.CostUSD, run.Status.Steps, run.Status.CostUSD)
	}
}

func summary(steps int, cost string) protocol.Summary {
	return protocol.Summary{Progress: counts(steps, cost), StopReason: "end", Result: true}
}

// sidecarEnv is the env of pod's sidecar container.
func sidecarEnv(pod *corev1.Pod) map[string]string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == protocol.SidecarContainerName {
			return envOf(c)
		}
	}
	return nil
}
