package controllers

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// A turn's guards come from a ClusterTurnPolicy that selects its namespace,
// the namespace's TurnPolicy, the run and the defaults, each value with its
// source on the turn's spec (`kubectl describe agentturn` shows them), and
// its Pod's sidecar runs with them. The run is older than the policies, so
// its stepBudget over the cluster policy's limit is capped.
func TestTurnGuardsFromPolicies(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	base := nsObj.DeepCopy()
	nsObj.Labels = map[string]string{"turnwatch.dev/test-team": ns}
	if err := k8s.Patch(ctx, nsObj, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	create(t, newRun(ns, "guarded", func(r *twv1.AgentRun) {
		r.Spec.Guards = &twv1.Guards{ErrorRepeats: ptrTo[int32](8), StepBudget: ptrTo[int32](300)}
	}))
	platform := &twv1.ClusterTurnPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-platform"},
		Spec: twv1.ClusterTurnPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: nsObj.Labels},
			TurnPolicySpec: twv1.TurnPolicySpec{
				Guards: &twv1.Guards{StallTimeout: ptrTo("20m"), IdenticalCalls: ptrTo[int32](6)},
				Limits: &twv1.GuardLimits{StepBudget: ptrTo[int32](100)},
			},
		},
	}
	create(t, platform)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), platform) })
	create(t, &twv1.TurnPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns},
		Spec: twv1.TurnPolicySpec{
			Guards:    &twv1.Guards{IdenticalCalls: ptrTo[int32](5)},
			Detectors: map[string]twv1.DetectorPolicy{"cycles": {Enforcement: twv1.EnforcementAudit}},
		},
	})
	startManager(t, ns, managerOpts{})
	pod := waitPod(t, ns, "guarded-0")

	turn, err := getTurn(ns, "guarded-0")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range turn.Spec.Guards {
		got[s.Name] = s.Value + " " + s.Source
	}
	limit := "limit of ClusterTurnPolicy/" + platform.Name
	want := map[string]string{
		"stepBudget":     "100 " + limit,
		"identicalCalls": "5 TurnPolicy/team",
		"stallTimeout":   `"20m" ClusterTurnPolicy/` + platform.Name,
		"errorRepeats":   "8 AgentRun",
		"toolTimeout":    `"30m" default`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("spec.guards %s = %q, want %q", name, got[name], w)
		}
	}
	if len(turn.Spec.Audit) != 1 || turn.Spec.Audit[0] != (twv1.AuditedDetector{Detector: "cycles", Source: "TurnPolicy/team"}) {
		t.Errorf("spec.audit = %+v, want cycles from TurnPolicy/team", turn.Spec.Audit)
	}

	var g twv1.Guards
	if err := json.Unmarshal([]byte(sidecarEnv(pod)[protocol.EnvGuards]), &g); err != nil {
		t.Fatal(err)
	}
	if *g.StepBudget != 100 || *g.IdenticalCalls != 5 || *g.StallTimeout != "20m" || *g.ErrorRepeats != 8 || *g.ToolTimeout != "30m" {
		t.Errorf("the sidecar's guards are not the turn's: %s", sidecarEnv(pod)[protocol.EnvGuards])
	}

	if _, err := os.Stat(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")); err != nil {
		return
	}
	out, errOut, err := testEnv.ControlPlane.KubeCtl().Run("describe", "agentturn", "guarded-0", "-n", ns)
	o, _ := io.ReadAll(out)
	if err != nil {
		e, _ := io.ReadAll(errOut)
		t.Fatalf("kubectl describe: %v: %s", err, e)
	}
	describe := string(o)
	if err := containsAll(describe, "Guards:", "Name:", "stepBudget", "Source:", limit,
		"TurnPolicy/team", "AgentRun", "Value:", "20m", "Audit:", "Detector:", "cycles"); err != nil {
		t.Errorf("describe: %v\n%s", err, describe)
	}
	if testing.Verbose() {
		t.Logf("%s", describe)
	}
}

// A turn written ahead of its run controller (a pre-made RUN-0, as a
// cluster administrator can still write one; turnwatch-agentturn-manager
// refuses everyone else) asks guards over a TurnPolicy's limits: the turn
// controller renders its Pod with the guards capped to the limits in force
// then, whatever the turn's spec says.
func TestPremadeTurnCappedAtRender(t *testing.T) {
	needEnv(t)
	t.Parallel()
	ns := newNamespace(t)
	create(t, &twv1.TurnPolicy{ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: ns},
		Spec: twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StepBudget: ptrTo[int32](100), StallTimeout: ptrTo("5m")}}})
	run := newRun(ns, "premade")
	create(t, run)
	turn := &twv1.AgentTurn{
		ObjectMeta: metav1.ObjectMeta{Name: agentrun.TurnName(run.Name, 0), Namespace: ns, Labels: render.TurnLabels(run, 0)},
		Spec: twv1.AgentTurnSpec{RunName: run.Name, Prompt: run.Spec.Prompt, Guards: []twv1.GuardSetting{
			{Name: "stepBudget", Value: "100000", Source: turnpolicy.SourceRun},
			{Name: "stallTimeout", Value: `"0s"`, Source: turnpolicy.SourceRun},
		}},
	}
	if err := controllerutil.SetControllerReference(run, turn, testScheme); err != nil {
		t.Fatal(err)
	}
	create(t, turn)
	startManager(t, ns, managerOpts{})
	pod := waitPod(t, ns, turn.Name)
	var g twv1.Guards
	if err := json.Unmarshal([]byte(sidecarEnv(pod)[protocol.EnvGuards]), &g); err != nil {
		t.Fatal(err)
	}
	if g.StepBudget == nil || *g.StepBudget != 100 || g.StallTimeout == nil || *g.StallTimeout != "5m" {
		t.Errorf("the sidecar's guards: %s, want stepBudget 100 and stallTimeout 5m (TurnPolicy/caps)", sidecarEnv(pod)[protocol.EnvGuards])
	}
	// A Warning says so, naming each guard, the values and the policy.
	evs := waitEvents(t, ns, run.Name, agentturn.EventGuardsCapped, 1)
	if err := containsAll(evs[0].Note, "stepBudget 100000 to 100 (limit of TurnPolicy/caps)", `stallTimeout "0s" to "5m" (limit of TurnPolicy/caps)`); err != nil || evs[0].Type != corev1.EventTypeWarning {
		t.Errorf("%s Event: %v (%s)", agentturn.EventGuardsCapped, err, evs[0].Type)
	}
	// The turn's spec is immutable: it still says what was written.
	if got, err := getTurn(ns, turn.Name); err != nil || got.Spec.Guards[0].Value != "100000" {
		t.Errorf("the turn: %+v, %v", got, err)
	}
}
