package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The admission policies turnwatch-agentrun-limits and
// turnwatch-agentrun-cluster-limits (config/sidecar) on a real API server:
// a run over a policy's limit is refused at apply, naming the field and the
// policy.

// labelledNamespace creates a namespace with labels.
func labelledNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tw-" + rand.String(8), Labels: labels}}
	create(t, ns)
	return ns.Name
}

// admitted dry-runs the creation of a run asking guards in ns: nil when the
// API server admits it.
func admitted(ns string, g twv1.Guards) error {
	run := newRun(ns, "probe-"+rand.String(5), func(r *twv1.AgentRun) { r.Spec.Guards = &g })
	return k8s.Create(context.Background(), run, client.DryRunAll)
}

// refusedFor checks that err refuses naming every one of want.
func refusedFor(err error, want ...string) error {
	if err == nil {
		return fmt.Errorf("admitted, want refused naming %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			return fmt.Errorf("refused with %q, want it to name %q", err, w)
		}
	}
	return nil
}

// waitRefused waits until the admission policy sees its parameter: a run
// asking g in ns is refused naming want.
func waitRefused(t *testing.T, ns string, g twv1.Guards, want ...string) {
	t.Helper()
	eventually(t, "the limit to hold in "+ns, func() error { return refusedFor(admitted(ns, g), want...) })
}

func TestTurnPolicyLimitsAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)
	// A run admitted before the policy, over its limit.
	before := newRun(ns, "before", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](500)} })
	create(t, before)
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns}, Spec: twv1.TurnPolicySpec{
		Limits: &twv1.GuardLimits{
			StepBudget:     ptr.To[int32](100),
			IdenticalCalls: ptr.To[int32](0),
			StallTimeout:   ptr.To("10m"),
			// One nano-dollar apart at 18 digits: double() would find
			// 100000000.000000002 equal to it.
			MaxCostUSD: ptr.To("100000000.000000001"),
		},
	}})
	waitRefused(t, ns, twv1.Guards{StepBudget: ptr.To[int32](101)}, "spec.guards.stepBudget", "TurnPolicy/team")

	for _, c := range []struct {
		name   string
		guards twv1.Guards
		want   []string // what the refusal names; none: admitted
	}{
		{"no guards", twv1.Guards{}, nil},
		{"at the limit", twv1.Guards{StepBudget: ptr.To[int32](100)}, nil},
		{"under the limit", twv1.Guards{StepBudget: ptr.To[int32](1)}, nil},
		{"over the limit", twv1.Guards{StepBudget: ptr.To[int32](101)}, []string{"spec.guards.stepBudget: 101 is over the limit 100 of TurnPolicy/team"}},
		{"off under a limit", twv1.Guards{StepBudget: ptr.To[int32](0)}, []string{"spec.guards.stepBudget: 0 (off) is over the limit 100 of TurnPolicy/team"}},
		{"a limit of 0 limits nothing", twv1.Guards{IdenticalCalls: ptr.To[int32](0)}, nil},
		{"a guard the policy does not limit", twv1.Guards{ErrorRepeats: ptr.To[int32](1000), ToolTimeout: ptr.To("0s")}, nil},
		{"duration at the limit, other units", twv1.Guards{StallTimeout: ptr.To("600s")}, nil},
		{"duration over the limit", twv1.Guards{StallTimeout: ptr.To("10m1s")}, []string{"spec.guards.stallTimeout: 10m1s is over the limit 10m of TurnPolicy/team"}},
		{"duration off", twv1.Guards{StallTimeout: ptr.To("0s")}, []string{"spec.guards.stallTimeout: 0s (off) is over the limit 10m"}},
		{"cost at the limit", twv1.Guards{MaxCostUSD: ptr.To("100000000.000000001")}, nil},
		{"cost under the limit", twv1.Guards{MaxCostUSD: ptr.To("5")}, nil},
		{"cost over the limit by a nano-dollar", twv1.Guards{MaxCostUSD: ptr.To("100000000.000000002")}, []string{"spec.guards.maxCostUSD: 100000000.000000002 is over the limit 100000000.000000001 of TurnPolicy/team"}},
		{"cost over the limit", twv1.Guards{MaxCostUSD: ptr.To("999999999")}, []string{"spec.guards.maxCostUSD"}},
	} {
		err := admitted(ns, c.guards)
		if c.want == nil && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if c.want != nil {
			if e := refusedFor(err, c.want...); e != nil {
				t.Errorf("%s: %v", c.name, e)
			}
		}
	}

	// An update is judged on the guards it changes.
	run := newRun(ns, "within", func(r *twv1.AgentRun) { r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](50)} })
	create(t, run)
	run.Spec.Guards.StepBudget = ptr.To[int32](150)
	if e := refusedFor(k8s.Update(ctx, run), "spec.guards.stepBudget: 150 is over the limit 100"); e != nil {
		t.Errorf("raising a guard over the limit: %v", e)
	}
	before.Labels = map[string]string{"touched": "yes"}
	if err := k8s.Update(ctx, before); err != nil {
		t.Errorf("a run admitted before the policy takes a label: %v", err)
	}
	before.Spec.Guards.StepBudget = ptr.To[int32](400)
	if e := refusedFor(k8s.Update(ctx, before), "spec.guards.stepBudget: 400 is over the limit 100"); e != nil {
		t.Errorf("a run admitted before the policy, changing its guard: %v", e)
	}

	// Every TurnPolicy of the namespace holds: the strictest refuses.
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "stricter", Namespace: ns}, Spec: twv1.TurnPolicySpec{
		Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](10)},
	}})
	waitRefused(t, ns, twv1.Guards{StepBudget: ptr.To[int32](11)}, "spec.guards.stepBudget: 11 is over the limit 10 of TurnPolicy/stricter")

	// Another namespace's policy does not apply.
	if err := admitted(newNamespace(t), twv1.Guards{StepBudget: ptr.To[int32](1000)}); err != nil {
		t.Errorf("a run of another namespace: %v", err)
	}
}

// A ClusterTurnPolicy's limits hold in the namespaces its selector selects,
// and only there. Every selector also matches a label only this test's
// namespaces carry, so that no other test's runs meet these limits.
func TestClusterTurnPolicyLimitsAdmission(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	const own, team = "limits.turnwatch.dev/test", "team"
	for _, c := range []struct {
		name        string
		matchLabels map[string]string
		exprs       []metav1.LabelSelectorRequirement
		match, miss map[string]string // labels of a namespace selected and of one not
	}{
		{"matchLabels", map[string]string{team: "a"}, nil, map[string]string{team: "a"}, map[string]string{team: "b"}},
		{"In", nil, []metav1.LabelSelectorRequirement{{Key: team, Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}},
			map[string]string{team: "b"}, map[string]string{team: "c"}},
		{"NotIn", nil, []metav1.LabelSelectorRequirement{{Key: team, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}},
			map[string]string{}, map[string]string{team: "a"}},
		{"Exists", nil, []metav1.LabelSelectorRequirement{{Key: team, Operator: metav1.LabelSelectorOpExists}},
			map[string]string{team: "x"}, map[string]string{}},
		{"DoesNotExist", nil, []metav1.LabelSelectorRequirement{{Key: team, Operator: metav1.LabelSelectorOpDoesNotExist}},
			map[string]string{}, map[string]string{team: "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := rand.String(8)
			labels := func(l map[string]string) map[string]string {
				out := map[string]string{own: id}
				for k, v := range l {
					out[k] = v
				}
				return out
			}
			match := labelledNamespace(t, labels(c.match))
			pol := &twv1.ClusterTurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "limits-" + id}}
			pol.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels(c.matchLabels), MatchExpressions: c.exprs}
			pol.Spec.Limits = &twv1.GuardLimits{SilentTurns: ptr.To[int32](5)}
			create(t, pol)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
			waitRefused(t, match, twv1.Guards{SilentTurns: ptr.To[int32](6)}, "spec.guards.silentTurns: 6 is over the limit 5 of ClusterTurnPolicy/"+pol.Name)
			if err := admitted(match, twv1.Guards{SilentTurns: ptr.To[int32](5)}); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			if err := admitted(labelledNamespace(t, labels(c.miss)), twv1.Guards{SilentTurns: ptr.To[int32](6)}); err != nil {
				t.Errorf("a namespace the selector does not select: %v", err)
			}
		})
	}
}

// A policy with bad input is refused at apply, naming the field. The client
// asks for strict field validation, as `kubectl apply` does (its --validate
// defaults to strict): without it the API server drops an unknown field with
// a warning.
func TestPolicyBadInput(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	for _, c := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"unknown guard", map[string]any{"guards": map[string]any{"stepBudgets": 10}}, []string{`unknown field "spec.guards.stepBudgets"`}},
		{"a setting is no limit", map[string]any{"limits": map[string]any{"worldTools": []any{"run_tests"}}}, []string{`unknown field "spec.limits.worldTools"`}},
		{"negative limit", map[string]any{"limits": map[string]any{"stepBudget": -1}}, []string{"spec.limits.stepBudget", "greater than or equal to 0"}},
		{"negative budget", map[string]any{"budget": map[string]any{"maxCostUSD": "-1", "window": "24h"}}, []string{"spec.budget.maxCostUSD", `"-1"`}},
		{"malformed budget", map[string]any{"budget": map[string]any{"maxCostUSD": "1e3", "window": "24h"}}, []string{"spec.budget.maxCostUSD", `"1e3"`}},
		{"budget without a window", map[string]any{"budget": map[string]any{"maxCostUSD": "10"}}, []string{"spec.budget.window", "Required"}},
		{"window under a minute", map[string]any{"budget": map[string]any{"maxCostUSD": "10", "window": "30s"}}, []string{"spec.budget.window", "window must be at least 1m"}},
		{"malformed window", map[string]any{"budget": map[string]any{"maxCostUSD": "10", "window": "1d"}}, []string{"spec.budget.window", `"1d"`}},
		// Past int64 nanoseconds: neither Go nor CEL reads it, and the
		// limits policies fail open; the CRD refuses it (DurationPattern).
		{"a limit no one can read", map[string]any{"limits": map[string]any{"toolTimeout": "2562048h"}}, []string{"spec.limits.toolTimeout", `"2562048h"`}},
		{"a guard no one can read", map[string]any{"guards": map[string]any{"stallTimeout": "2562048h"}}, []string{"spec.guards.stallTimeout", `"2562048h"`}},
		{"a window no one can read", map[string]any{"budget": map[string]any{"maxCostUSD": "10", "window": "2562048h"}}, []string{"spec.budget.window", `"2562048h"`}},
		{"unknown detector", map[string]any{"detectors": map[string]any{"loops": map[string]any{"enforcement": "audit"}}}, []string{"spec.detectors", "every key must name a detector"}},
		{"unknown enforcement", map[string]any{"enforcement": "warn"}, []string{"spec.enforcement", `Unsupported value: "warn"`}},
		{"unknown detector enforcement", map[string]any{"detectors": map[string]any{"spend": map[string]any{"enforcement": "warn"}}}, []string{"spec.detectors.spend.enforcement", `Unsupported value: "warn"`}},
	} {
		for _, kind := range []string{"TurnPolicy", "ClusterTurnPolicy"} {
			pol := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": twv1.GroupVersion.String(), "kind": kind,
				"metadata": map[string]any{"name": "bad-" + rand.String(8)},
				"spec":     c.spec,
			}}
			if kind == "TurnPolicy" {
				pol.SetNamespace(ns)
			}
			err := k8s.Create(context.Background(), pol, client.FieldValidation("Strict"))
			if err == nil {
				_ = k8s.Delete(context.Background(), pol)
			}
			if e := refusedFor(err, c.want...); e != nil {
				t.Errorf("%s %s: %v", kind, c.name, e)
			}
		}
	}
}

// A run's guard duration that no one can read (past int64 nanoseconds:
// Go's time.ParseDuration and CEL's duration() fail on it) is refused at
// apply by the CRD, naming the field, though the limits policy that would
// judge it fails open; the largest duration the API admits is read by both
// and judged against the limit.
func TestUnreadableDurationRefused(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StallTimeout: ptr.To("10m"), ToolTimeout: ptr.To("99999h")}}})
	waitRefused(t, ns, twv1.Guards{StallTimeout: ptr.To("11m")}, "spec.guards.stallTimeout", "TurnPolicy/caps")
	for _, field := range []string{"stallTimeout", "toolTimeout"} {
		g := twv1.Guards{}
		for _, v := range []string{"2562048h", "100000h", "1h1m1s1ms1us"} {
			if field == "stallTimeout" {
				g.StallTimeout = ptr.To(v)
			} else {
				g.ToolTimeout = ptr.To(v)
			}
			err := admitted(ns, g)
			if e := refusedFor(err, "spec.guards."+field, `"`+v+`"`, "should match"); e != nil {
				t.Errorf("%s %s: %v", field, v, e)
			}
		}
	}
	if err := admitted(ns, twv1.Guards{ToolTimeout: ptr.To("99999h")}); err != nil {
		t.Errorf("the largest readable duration at the limit: %v", err)
	}
	if err := refusedFor(admitted(ns, twv1.Guards{StallTimeout: ptr.To("99999h")}), "spec.guards.stallTimeout", "over the limit 10m"); err != nil {
		t.Errorf("the largest readable duration over the limit: %v", err)
	}
}
