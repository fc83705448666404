//go:build e2e

package e2e

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Policies on the real node (docs/policies.md). Each test makes a namespace
// of its own: a namespace's TurnPolicy applies to every run in it, so one in
// the suite's namespace would hold or audit the other tests' runs.

var turnPolicyGVR = schema.GroupVersionResource{Group: "turnwatch.dev", Version: "v1alpha1", Resource: "turnpolicies"}

// What a policy's run shows that the twv1 constants do not name.
const (
	// conditionRunBudgetExhausted is the condition of a run kept Pending
	// by a spent budget, naming the policy (docs/policies.md#budgets).
	conditionRunBudgetExhausted = "BudgetExhausted"
	// eventWouldTrip is the Normal Event of an audited trip (docs/policies.md#audit).
	eventWouldTrip = "WouldTrip"
	// overspendTotalUSD is what the overspend scenario costs when it plays
	// to its end: ten messages of 0.36 and a last one of 0.303.
	overspendTotalUSD = "3.903"
)

// TestNamespaceBudget: a namespace budget of a few cents stops a run that
// spends past it in the middle of its turn (class overspend, detector
// budget, never rerolled), the policy's ledger counts that turn once and
// says BudgetExhausted, and the next run applied in the namespace stays
// Pending with a BudgetExhausted condition naming the policy.
//
// The agent is the fake agent's overspend stream (0.36 USD a message): a
// drill's scripted cents would take too long to spend the budget. Its 18.7 s at speed 0.35 play for about
// 53 s; the sidecar reports the run's cost every e2e progress period
// (15 s), so the budget is seen spent about 15 s in (about 1 USD), and the
// turn must be stopped long before its stream ends.
func TestNamespaceBudget(t *testing.T) {
	needOperator(t)
	t.Parallel()
	ns := policyNamespace(t, "budget")
	const policy, spender, held = "team-budget", "spender", "held"
	shown := &userView{t: t, file: "namespace-budget.txt"}
	defer shown.write()
	applyYAML(t, `apiVersion: turnwatch.dev/v1alpha1
kind: TurnPolicy
metadata:
  name: `+policy+`
  namespace: `+ns+`
spec:
  budget:
    maxCostUSD: "0.05"
    window: 1h
`)
	waitLedgerStarted(t, ns, policy)

	run := agentRun(spender, runSpec{scenario: "overspend", format: "pi", speed: 0.35})
	run.SetNamespace(ns)
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Create(context.Background(), run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkTurnHoldsBudgetFinalizer(t, ns, spender)
	start := time.Now()
	got := waitRunIn(t, ns, spender, 3*time.Minute)
	env.report.add("namespace budget: created to stopped", time.Since(start))

	// The run and its one turn: stopped by the budget, not rerolled.
	fault := [3]string{str(got, "status", "phase"), str(got, "status", "fault", "class"), str(got, "status", "fault", "detector")}
	if fault != [3]string{"Faulted", string(twv1.ClassOverspend), twv1.DetectorBudget} {
		t.Fatalf("run %s: phase, class, detector = %v; want Faulted %s %s\n%s", spender, fault, twv1.ClassOverspend, twv1.DetectorBudget, describeIn(ns, "agentrun", spender))
	}
	turns := turnsIn(ns, spender)
	if len(turns) != 1 {
		t.Fatalf("turns %s, want one: a budget stop is never rerolled", fmtTurns(turns))
	}
	turn := turns[0]
	if e := [3]string{str(turn, "status", "outcome"), str(turn, "status", "error", "type"), str(turn, "status", "error", "detector")}; e != [3]string{"Failed", string(twv1.ClassOverspend), twv1.DetectorBudget} {
		t.Errorf("turn %s outcome, error type, detector = %v; want Failed %s %s", turn.GetName(), e, twv1.ClassOverspend, twv1.DetectorBudget)
	}
	// Mid-turn: it spent past the budget and was stopped before its stream's end.
	cost := str(turn, "status", "costUSD")
	if !decimalLess("0.05", cost) || !decimalLess(cost, overspendTotalUSD) {
		t.Errorf("turn %s cost %q; want past the budget (0.05) and short of the whole stream's %s", turn.GetName(), cost, overspendTotalUSD)
	}
	reportBudgetStop(turn)

	// The ledger counted the turn once, and the budget is spent.
	checkLedgerSettled(t, ns, policy, turn, cost)
	out, err := kubectl("-n", ns, "get", "turnpolicies")
	if err != nil {
		t.Fatal(err)
	}
	shown.add("kubectl get turnpolicies -n "+ns, out)
	env.report.addBlock("kubectl get turnpolicies (a namespace budget of 0.05 USD, spent)", out)
	if row := rowOf(out, policy); row["BUDGET"] != "0.05" || row["WINDOW"] != "1h" || !sameDecimal(row["SPENT"], cost) || row["EXHAUSTED"] != "True" {
		t.Errorf("kubectl get turnpolicies row %v; want BUDGET 0.05, WINDOW 1h, SPENT %s, EXHAUSTED True", row, cost)
	}
	text := describeIn(ns, "agentrun", spender)
	shown.add("kubectl describe agentrun "+spender+" -n "+ns, text)
	if miss, ok := matchAll(text, `Class:\s+overspend`, `Detector:\s+budget`, `Turn:\s+`+regexp.QuoteMeta(turn.GetName())); !ok {
		t.Errorf("kubectl describe agentrun %s lacks %s", spender, miss)
	}
	if msg := str(got, "status", "fault", "message"); !strings.Contains(msg, "TurnPolicy/"+policy) {
		t.Errorf("run %s: fault message %q; want it to name TurnPolicy/%s", spender, msg, policy)
	}

	// The next run waits: Pending, no turn, the condition naming the policy.
	next := agentRun(held, runSpec{scenario: "healthy", format: "pi", speed: 4})
	next.SetNamespace(ns)
	if out, err := kubectlApply(t, next); err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s", held, err, out)
	}
	checkHeldByBudget(t, ns, held, policy)
	out, _ = kubectl("-n", ns, "get", "agentruns")
	shown.add("kubectl get agentruns -n "+ns, out)
	env.report.addBlock("kubectl get agentruns (one stopped by the namespace budget, the next held)", out)
	if row := rowOf(out, spender); row["PHASE"] != "Faulted" || row["REASON"] != "Overspend" {
		t.Errorf("kubectl get agentruns row %v; want PHASE Faulted, REASON Overspend", row)
	}
	if row := rowOf(out, held); row["PHASE"] != "Pending" {
		t.Errorf("kubectl get agentruns row %v; want PHASE Pending", row)
	}
	text = describeIn(ns, "agentrun", held)
	shown.add("kubectl describe agentrun "+held+" -n "+ns, text)
	if miss, ok := containsAll(text, conditionRunBudgetExhausted, policy); !ok {
		t.Errorf("kubectl describe agentrun %s lacks %q", held, miss)
	}
}

// TestAuditPolicy: a TurnPolicy that sets identicalCalls and audits it lets
// a looping agent run to its end: the run succeeds as the agent ends, the
// turn records the would-trip (status.wouldTrip, a WouldTrip Event), and
// its effective guards name the policy as the source of what it set.
func TestAuditPolicy(t *testing.T) {
	needOperator(t)
	t.Parallel()
	ns, name, policy := auditedLoop(t, "audit")
	source := "TurnPolicy/" + policy
	turns := turnsIn(ns, name)
	if len(turns) != 1 {
		t.Fatalf("turns %s, want one", fmtTurns(turns))
	}
	turn := turns[0]
	if steps := num(turn, "status", "steps"); steps != 100 {
		t.Errorf("turn %s steps %d, want the whole loop's 100 calls", turn.GetName(), steps)
	}

	// The effective guards and audit name the policy.
	if v, src := guardSetting(turn, monitor.DetectorIdenticalCalls); v != "5" || src != source {
		t.Errorf("turn %s spec.guards identicalCalls = %q from %q, want 5 from %s", turn.GetName(), v, src, source)
	}
	if src := auditSource(turn, monitor.DetectorIdenticalCalls); src != source {
		t.Errorf("turn %s spec.audit identicalCalls from %q, want %s", turn.GetName(), src, source)
	}

	// The would-trip is recorded, and it stopped nothing.
	wt, ok := wouldTrip(turn, monitor.DetectorIdenticalCalls)
	if !ok || num(wt, "count") < 1 || str(wt, "class") != string(twv1.ClassRunaway) {
		t.Errorf("turn %s status.wouldTrip = %v, want identicalCalls, class runaway, count >= 1", turn.GetName(), turn.Object["status"])
	} else {
		t.Logf("would-trip: identicalCalls %d times, first at step %d: %s", num(wt, "count"), num(wt, "step"), str(wt, "message"))
	}
	if p, ok := podIn(ns, str(turn, "status", "podName")); ok {
		if c, ok := podCondition(p, protocol.ConditionTripped); ok {
			t.Errorf("Pod %s has %s (%s %q): an audited detector must not trip", p.Name, c.Type, c.Reason, c.Message)
		}
	}
	shown := &userView{t: t, file: "audit-policy.txt"}
	defer shown.write()
	turnText := describeIn(ns, "agentturn", turn.GetName())
	shown.add("kubectl describe agentturn "+turn.GetName()+" -n "+ns, turnText)
	if miss, ok := containsAll(turnText, source, monitor.DetectorIdenticalCalls); !ok {
		t.Errorf("kubectl describe agentturn %s lacks %q", turn.GetName(), miss)
	}
	// The Event is about the run or its turn: describe of that one shows it.
	if kind, obj, ok := wouldTripEvent(t, ns, name, turn.GetName()); ok {
		text := describeIn(ns, kind, obj)
		shown.add("kubectl describe "+kind+" "+obj+" -n "+ns, text)
		if !strings.Contains(text, eventWouldTrip) {
			t.Errorf("kubectl describe %s %s shows no %s Event", kind, obj, eventWouldTrip)
		}
	}
}

// auditedLoop runs a looping agent in a namespace of its own whose
// TurnPolicy audits identicalCalls (at 5), and waits until the run has
// Succeeded: the audited detector only recorded its would-trips.
func auditedLoop(t *testing.T, suffix string) (ns, run, policy string) {
	t.Helper()
	ns = policyNamespace(t, suffix)
	policy, run = "audit-loops", "looping"
	applyYAML(t, `apiVersion: turnwatch.dev/v1alpha1
kind: TurnPolicy
metadata:
  name: `+policy+`
  namespace: `+ns+`
spec:
  guards:
    identicalCalls: 5
  detectors:
    identicalCalls:
      enforcement: audit
`)
	waitPolicySeen(t, ns, policy)

	// The loop scenario: the same grep 100 times, then a final answer.
	u := agentRun(run, runSpec{scenario: "identicalLoop", format: "pi", speed: 4, rerolls: ptr[int64](0)})
	u.SetNamespace(ns)
	if _, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := waitRunIn(t, ns, run, 3*time.Minute)
	env.report.add("audit policy: a looping run to Succeeded", time.Since(start))
	if phase := str(got, "status", "phase"); phase != "Succeeded" {
		t.Fatalf("run %s phase %s (fault %s %s), want Succeeded: an audited detector never stops the turn\n%s", run, phase,
			str(got, "status", "fault", "class"), str(got, "status", "fault", "detector"), describeIn(ns, "agentrun", run))
	}
	return ns, run, policy
}

// reportBudgetStop reports how long the agent ran before the budget
// stopped its turn (reported, not asserted: the machine is shared). The
// stream passes the budget about 5 s in; the sidecar reports the cost
// every 15 s.
func reportBudgetStop(turn *unstructured.Unstructured) {
	p, ok := podIn(turn.GetNamespace(), str(turn, "status", "podName"))
	if !ok {
		return
	}
	cs, ok := containerStatus(p, "agent")
	done, err := time.Parse(time.RFC3339, str(turn, "status", "completionTime"))
	if !ok || cs.State.Terminated == nil || err != nil {
		return
	}
	env.report.add("namespace budget: agent started to turn stopped (progress period 15s)", done.Sub(cs.State.Terminated.StartedAt.Time))
}

// userView is what a test showed of its objects as a user sees them: each
// command and its output goes to the log and, at the end, to a file in
// bin/e2e (the budget's goes to the closing note).
type userView struct {
	t    *testing.T
	file string
	b    strings.Builder
}

func (v *userView) add(command, out string) {
	v.t.Logf("$ %s\n%s", command, out)
	v.b.WriteString("$ " + command + "\n" + out + "\n")
}

func (v *userView) write() {
	path := filepath.Join(env.artifacts, v.file)
	if err := os.WriteFile(path, []byte(v.b.String()), 0o644); err != nil {
		v.t.Log(err)
		return
	}
	v.t.Logf("what a user sees: %s", path)
}

// policyNamespace makes the test's own namespace, deleted when it passed
// (a failed test's is kept to look at).
func policyNamespace(t *testing.T, suffix string) string {
	t.Helper()
	ns := env.ns + "-" + suffix
	if err := runNamespace(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_, _ = kubectl("delete", "namespace", ns, "--wait=false")
		}
	})
	return ns
}

// applyYAML applies a manifest with kubectl, as a user would. The policy
// CRDs were applied with the others but are not waited for, so a refusal
// for an unknown kind is retried a while.
func applyYAML(t *testing.T, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	var out string
	err := waitFor(context.Background(), time.Minute, "kubectl apply of a TurnPolicy", func() (bool, error) {
		var err error
		out, err = kubectl("apply", "-f", f)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// podIn returns a Pod of a namespace of the test's own.
func podIn(ns, name string) (*corev1.Pod, bool) {
	if name == "" {
		return nil, false
	}
	p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	return p, err == nil
}

func getPolicy(ns, name string) (*unstructured.Unstructured, bool) {
	u, err := env.dyn.Resource(turnPolicyGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	return u, err == nil
}

// waitPolicySeen waits until the manager has computed the policy's status
// (observedGeneration): its cache, which the run controller shares, holds
// the policy, so the run created next is resolved with it. Without that
// status the test goes on after the wait, and the turn's guards tell.
func waitPolicySeen(t *testing.T, ns, name string) {
	t.Helper()
	err := waitFor(context.Background(), 20*time.Second, "TurnPolicy "+name+" observed", func() (bool, error) {
		p, ok := getPolicy(ns, name)
		return ok && num(p, "status", "observedGeneration") >= p.GetGeneration(), nil
	})
	if err != nil {
		t.Logf("%v: going on", err)
	}
}

// waitLedgerStarted waits until the budget's first window started (the
// policy is first seen), or at least its status was computed: a turn
// created before the manager knew the budget would not hold the budget
// finalizer (checkTurnHoldsBudgetFinalizer says so).
func waitLedgerStarted(t *testing.T, ns, name string) {
	t.Helper()
	err := waitFor(context.Background(), 30*time.Second, "TurnPolicy "+name+" to start its window", func() (bool, error) {
		p, ok := getPolicy(ns, name)
		return ok && (str(p, "status", "budget", "windowStart") != "" || num(p, "status", "observedGeneration") >= p.GetGeneration()), nil
	})
	if err != nil {
		t.Logf("%v: going on", err)
	}
}

// checkTurnHoldsBudgetFinalizer: the run's first turn is created holding
// the budget finalizer, which keeps it until the ledger counted it.
func checkTurnHoldsBudgetFinalizer(t *testing.T, ns, run string) {
	t.Helper()
	var turns []*unstructured.Unstructured
	err := waitFor(context.Background(), time.Minute, "the first turn of "+run, func() (bool, error) {
		turns = turnsIn(ns, run)
		return len(turns) > 0, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describeIn(ns, "agentrun", run))
	}
	// Once counted, the finalizer goes: only a turn still running must hold it.
	if str(turns[0], "status", "outcome") == "" && !slices.Contains(turns[0].GetFinalizers(), twv1.BudgetFinalizer) {
		t.Errorf("turn %s finalizers %v, want %s", turns[0].GetName(), turns[0].GetFinalizers(), twv1.BudgetFinalizer)
	}
}

// checkLedgerSettled waits until the policy's ledger counted the settled
// turn exactly once (one turn, its cost settled and spent, nothing of a
// running turn), the budget is exhausted, and the turn's finalizer and its
// counting entry are gone.
func checkLedgerSettled(t *testing.T, ns, policy string, turn *unstructured.Unstructured, cost string) {
	t.Helper()
	var p *unstructured.Unstructured
	err := waitFor(context.Background(), 2*time.Minute, "the ledger of "+policy+" to count "+turn.GetName(), func() (bool, error) {
		var ok bool
		if p, ok = getPolicy(ns, policy); !ok {
			return false, nil
		}
		counting, _, _ := unstructured.NestedSlice(p.Object, "status", "budget", "counting")
		cur, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).Get(context.Background(), turn.GetName(), metav1.GetOptions{})
		held := err == nil && slices.Contains(cur.GetFinalizers(), twv1.BudgetFinalizer)
		return num(p, "status", "budget", "turns") == 1 && sameDecimal(str(p, "status", "budget", "settledUSD"), cost) &&
			sameDecimal(str(p, "status", "budget", "spentUSD"), cost) && policyCondition(p, twv1.PolicyConditionBudgetExhausted) == "True" &&
			len(counting) == 0 && !held, nil
	})
	if err != nil {
		var status any
		if p != nil {
			status = p.Object["status"]
		}
		t.Errorf("%v (want turns 1, settled and spent %s, %s True, counting empty, the turn's %s removed): status %v",
			err, cost, twv1.PolicyConditionBudgetExhausted, twv1.BudgetFinalizer, status)
	}
}

// checkHeldByBudget: the run stays Pending with a BudgetExhausted condition
// naming the policy, and no turn is created, for a while after it says so.
func checkHeldByBudget(t *testing.T, ns, run, policy string) {
	t.Helper()
	var r *unstructured.Unstructured
	err := waitFor(context.Background(), time.Minute, run+" held by the budget", func() (bool, error) {
		var err error
		r, err = env.dyn.Resource(agentRunGVR).Namespace(ns).Get(context.Background(), run, metav1.GetOptions{})
		return err == nil && runCondition(r, conditionRunBudgetExhausted) != nil, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describeIn(ns, "agentrun", run))
	}
	time.Sleep(10 * time.Second) // long enough for a turn to be created, were it let through
	r, err = env.dyn.Resource(agentRunGVR).Namespace(ns).Get(context.Background(), run, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := runCondition(r, conditionRunBudgetExhausted)
	if phase := str(r, "status", "phase"); phase != "Pending" || c == nil || c["status"] != "True" || !strings.Contains(c["message"], policy) {
		t.Errorf("run %s phase %q, condition %s = %v; want Pending, True, naming %s", run, phase, conditionRunBudgetExhausted, c, policy)
	}
	if turns := turnsIn(ns, run); len(turns) != 0 {
		t.Errorf("run %s held by a spent budget has turns %s", run, fmtTurns(turns))
	}
}

// wouldTripEvent finds the Normal WouldTrip Event on the run or its turn
// and returns the kind (as kubectl names it) and name of what it is about.
func wouldTripEvent(t *testing.T, ns, run, turn string) (kind, name string, found bool) {
	t.Helper()
	err := waitFor(context.Background(), 30*time.Second, "a "+eventWouldTrip+" Event", func() (bool, error) {
		list, err := env.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + eventWouldTrip})
		if err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if o := e.InvolvedObject; (o.Kind == "AgentRun" && o.Name == run) || (o.Kind == "AgentTurn" && o.Name == turn) {
				kind, name = strings.ToLower(o.Kind), o.Name
				if e.Type != corev1.EventTypeNormal {
					t.Errorf("%s Event %q is %s, want Normal", eventWouldTrip, e.Message, e.Type)
				}
				t.Logf("%s Event on %s %s: %s", eventWouldTrip, o.Kind, o.Name, e.Message)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("%v on run %s or turn %s", err, run, turn)
		return "", "", false
	}
	return kind, name, true
}

// waitRunIn waits until a run of namespace ns is terminal and returns it.
func waitRunIn(t *testing.T, ns, name string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var run *unstructured.Unstructured
	err := waitFor(context.Background(), timeout, "AgentRun "+ns+"/"+name+" to finish", func() (bool, error) {
		r, err := env.dyn.Resource(agentRunGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		run = r
		switch str(r, "status", "phase") {
		case "Succeeded", "Faulted", "Aborted":
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describeIn(ns, "agentrun", name))
	}
	return run
}

// turnsIn is turnsOf for a namespace of the test's own.
func turnsIn(ns, run string) []*unstructured.Unstructured {
	list, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{labelRun: run}).String()})
	if err != nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return int(num(a, "spec", "attempt") - num(b, "spec", "attempt"))
	})
	return out
}

func describeIn(ns, kind, name string) string {
	out, err := kubectl("-n", ns, "describe", kind, name)
	if err != nil {
		return err.Error()
	}
	return out
}

// rowOf returns name's row of a `kubectl get` table by column header. A
// cell may be empty (a policy without enforcement), so the cells are cut
// where the header's columns start rather than split on spaces.
func rowOf(table, name string) map[string]string {
	lines := strings.Split(table, "\n")
	if len(lines) == 0 {
		return nil
	}
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) == 0 || f[0] != name {
			continue
		}
		row := map[string]string{}
		for i, at := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(line))
			}
			col := strings.Fields(header[at:])[0]
			if at < end {
				row[col] = strings.TrimSpace(line[at:end])
			}
		}
		return row
	}
	return nil
}

// matchAll reports the first of the patterns that text does not match.
func matchAll(text string, patterns ...string) (string, bool) {
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(text) {
			return p, false
		}
	}
	return "", true
}

// decimalLess reports a < b for decimal strings; false when either is not one.
func decimalLess(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) < 0
}

// policyCondition is the status of a policy's condition, "" when it has none.
func policyCondition(p *unstructured.Unstructured, typ string) string {
	if c := runCondition(p, typ); c != nil {
		return c["status"]
	}
	return ""
}

// runCondition returns an object's status condition of the given type as
// strings (status, reason, message), nil when it has none.
func runCondition(u *unstructured.Unstructured, typ string) map[string]string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		out := map[string]string{}
		for _, k := range []string{"status", "reason", "message"} {
			out[k], _ = m[k].(string)
		}
		return out
	}
	return nil
}

// guardSetting returns the value and source of a turn's effective guard.
func guardSetting(turn *unstructured.Unstructured, name string) (value, source string) {
	gs, _, _ := unstructured.NestedSlice(turn.Object, "spec", "guards")
	for _, g := range gs {
		if m, ok := g.(map[string]any); ok && m["name"] == name {
			value, _ = m["value"].(string)
			source, _ = m["source"].(string)
		}
	}
	return value, source
}

// auditSource returns the policy that audits a detector on a turn.
func auditSource(turn *unstructured.Unstructured, detector string) string {
	as, _, _ := unstructured.NestedSlice(turn.Object, "spec", "audit")
	for _, a := range as {
		if m, ok := a.(map[string]any); ok && m["detector"] == detector {
			s, _ := m["source"].(string)
			return s
		}
	}
	return ""
}

// wouldTrip returns a turn's status.wouldTrip entry of a detector.
func wouldTrip(turn *unstructured.Unstructured, detector string) (*unstructured.Unstructured, bool) {
	ws, _, _ := unstructured.NestedSlice(turn.Object, "status", "wouldTrip")
	for _, w := range ws {
		if m, ok := w.(map[string]any); ok && m["detector"] == detector {
			return &unstructured.Unstructured{Object: m}, true
		}
	}
	return nil, false
}
