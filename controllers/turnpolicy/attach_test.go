package turnpolicy

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TestNamespaceGuardsCapLikeATurn: an attached Pod's sidecar, laying the
// Pod's guards annotation over its namespace's guards and capping it to
// the strictest limits (monitor.OverrideGuards), runs the guards the
// manager resolves for a run of that namespace whose spec.guards is the
// annotation: two policies whose limits cap different guards, one each.
func TestNamespaceGuardsCapLikeATurn(t *testing.T) {
	defaults := shared.DefaultConfig().Guards
	policies := orderPolicies(
		[]twv1.ClusterTurnPolicy{clusterPolicy("org", 2*time.Hour, twv1.TurnPolicySpec{
			Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](300), StallTimeout: ptr.To("20m")}})},
		[]twv1.TurnPolicy{turnPolicy("team", time.Hour, twv1.TurnPolicySpec{
			Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](3)},
			Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](500), StallTimeout: ptr.To("10m"), MaxCostUSD: ptr.To("2.00")}})}, nil)
	guards, limits, _, err := NamespaceGuards(defaults, policies)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"maxCostUSD":"2.00","stallTimeout":"10m","stepBudget":300}`; string(limits) != want {
		t.Errorf("limits %s, want the strictest of each: %s", limits, want)
	}
	for _, annotation := range []string{``, `{"stepBudget":1000,"stallTimeout":"1h","identicalCalls":9}`, `{"stepBudget":50,"maxCostUSD":"1.00"}`, `{"maxCostUSD":""}`} {
		out, _, err := monitor.OverrideGuards(guards, []byte(annotation), limits)
		if err != nil {
			t.Fatal(err)
		}
		sidecar, err := monitor.ParseGuards(out)
		if err != nil {
			t.Fatal(err)
		}
		var run *twv1.Guards
		if annotation != "" {
			run = &twv1.Guards{}
			if err := json.Unmarshal([]byte(annotation), run); err != nil {
				t.Fatal(err)
			}
		}
		settings, _ := ResolveGuards(GuardInputs{Defaults: defaults, Policies: policies, Run: run})
		g, err := settingsGuards(settings)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(g)
		manager, err := monitor.ParseGuards(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sidecar, manager) {
			t.Errorf("annotation %s:\nsidecar %+v\nmanager %+v", annotation, sidecar, manager)
		}
	}
}
