package turnpolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// policyAge is a policy's metadata, age before a fixed time.
func policyAge(name string, age time.Duration) metav1.ObjectMeta {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}
}

func clusterPolicy(name string, age time.Duration, spec twv1.TurnPolicySpec) twv1.ClusterTurnPolicy {
	return twv1.ClusterTurnPolicy{ObjectMeta: policyAge(name, age), Spec: twv1.ClusterTurnPolicySpec{TurnPolicySpec: spec}}
}

func turnPolicy(name string, age time.Duration, spec twv1.TurnPolicySpec) twv1.TurnPolicy {
	return twv1.TurnPolicy{ObjectMeta: policyAge(name, age), Spec: spec}
}

func TestResolveGuards(t *testing.T) {
	audit := twv1.EnforcementAudit
	enforce := twv1.EnforcementEnforce
	tests := []struct {
		name    string
		cluster []twv1.ClusterTurnPolicy
		local   []twv1.TurnPolicy
		run     *twv1.Guards
		drill   *twv1.Guards
		isDrill bool
		// want are guards' "value source"; every other guard is the default's.
		want      map[string]string
		wantAudit []string // "detector source"
	}{{
		name: "no policy: defaults, the run over them",
		run:  &twv1.Guards{StepBudget: ptr.To[int32](300)},
		want: map[string]string{"stepBudget": "300 AgentRun", "identicalCalls": "4 default", "maxCostUSD": "null default", "worldTools": "null default"},
	}, {
		name:    "a cluster policy over the defaults",
		cluster: []twv1.ClusterTurnPolicy{clusterPolicy("c", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](6)}})},
		want:    map[string]string{"identicalCalls": "6 ClusterTurnPolicy/c"},
	}, {
		name:    "a namespace policy over a cluster one",
		cluster: []twv1.ClusterTurnPolicy{clusterPolicy("c", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](6), StallTimeout: ptr.To("20m")}})},
		local:   []twv1.TurnPolicy{turnPolicy("t", 2*time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](5)}})},
		want:    map[string]string{"identicalCalls": "5 TurnPolicy/t", "stallTimeout": `"20m" ClusterTurnPolicy/c`},
	}, {
		name:  "the run over a namespace policy",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](5), WorldTools: []string{"make"}}})},
		run:   &twv1.Guards{IdenticalCalls: ptr.To[int32](3), WorldTools: []string{}},
		want:  map[string]string{"identicalCalls": "3 AgentRun", "worldTools": "[] AgentRun"},
	}, {
		name: "the oldest of a level wins each field it sets",
		cluster: []twv1.ClusterTurnPolicy{
			clusterPolicy("young", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](7), ErrorRepeats: ptr.To[int32](9)}}),
			clusterPolicy("old", 2*time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{IdenticalCalls: ptr.To[int32](8)}}),
		},
		local: []twv1.TurnPolicy{
			turnPolicy("b", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{StepBudget: ptr.To[int32](10)}}),
			turnPolicy("a", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{StepBudget: ptr.To[int32](20), SilentTurns: ptr.To[int32](3)}}),
		},
		want: map[string]string{"identicalCalls": "8 ClusterTurnPolicy/old", "errorRepeats": "9 ClusterTurnPolicy/young",
			"stepBudget": "20 TurnPolicy/a", "silentTurns": "3 TurnPolicy/a"},
	}, {
		name:  "a limit caps a default and the run's value, and keeps one under it",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](100), ErrorRepeats: ptr.To[int32](5), WhitespaceDeltas: ptr.To[int32](200)}})},
		run:   &twv1.Guards{ErrorRepeats: ptr.To[int32](50)},
		want: map[string]string{"stepBudget": "100 limit of TurnPolicy/t", "errorRepeats": "5 limit of TurnPolicy/t",
			"whitespaceDeltas": "128 default"},
	}, {
		name: "0 (off) is more than any limit; a limit of 0 holds nothing",
		cluster: []twv1.ClusterTurnPolicy{clusterPolicy("c", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{
			IdenticalCalls: ptr.To[int32](10), StallTimeout: ptr.To("1h"), StepBudget: ptr.To[int32](0)}})},
		run: &twv1.Guards{IdenticalCalls: ptr.To[int32](0), StallTimeout: ptr.To("0s"), StepBudget: ptr.To[int32](5000)},
		want: map[string]string{"identicalCalls": "10 limit of ClusterTurnPolicy/c", "stallTimeout": `"1h" limit of ClusterTurnPolicy/c`,
			"stepBudget": "5000 AgentRun"},
	}, {
		name:  "durations compare as durations",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StallTimeout: ptr.To("1h"), ToolTimeout: ptr.To("2h")}})},
		run:   &twv1.Guards{StallTimeout: ptr.To("90m"), ToolTimeout: ptr.To("1h59m")},
		want:  map[string]string{"stallTimeout": `"1h" limit of TurnPolicy/t`, "toolTimeout": `"1h59m" AgentRun`},
	}, {
		name:  "an unset maxCostUSD is capped to the limit",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{MaxCostUSD: ptr.To("5")}})},
		want:  map[string]string{"maxCostUSD": `"5" limit of TurnPolicy/t`},
	}, {
		name:  "costs compare as money",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{MaxCostUSD: ptr.To("10")}})},
		run:   &twv1.Guards{MaxCostUSD: ptr.To("9.50")},
		want:  map[string]string{"maxCostUSD": `"9.50" AgentRun`},
	}, {
		name:    "the strictest limit wins, whatever its level",
		cluster: []twv1.ClusterTurnPolicy{clusterPolicy("c", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](100), MaxCostUSD: ptr.To("3")}})},
		local:   []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{StepBudget: ptr.To[int32](150)}, Limits: &twv1.GuardLimits{StepBudget: ptr.To[int32](200), MaxCostUSD: ptr.To("2.5")}})},
		run:     &twv1.Guards{MaxCostUSD: ptr.To("4")},
		want:    map[string]string{"stepBudget": "100 limit of ClusterTurnPolicy/c", "maxCostUSD": `"2.5" limit of TurnPolicy/t`},
	}, {
		name:    "a drill's guards go on top, over limits, and nothing is audited",
		local:   []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Enforcement: audit, Limits: &twv1.GuardLimits{CycleRepeats: ptr.To[int32](3), StepBudget: ptr.To[int32](50)}})},
		run:     &twv1.Guards{CycleRepeats: ptr.To[int32](2)},
		drill:   &twv1.Guards{CycleRepeats: ptr.To[int32](4)},
		isDrill: true,
		want:    map[string]string{"cycleRepeats": "4 drill", "stepBudget": "50 limit of TurnPolicy/t"},
	}, {
		name:  "policy-wide audit",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Enforcement: audit})},
		wantAudit: func() (out []string) {
			for _, d := range monitor.Detectors() {
				out = append(out, d.Name+" TurnPolicy/t")
			}
			return out
		}(),
	}, {
		name: "a detector's enforcement beats its policy's",
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Enforcement: enforce,
			Detectors: map[string]twv1.DetectorPolicy{"cycles": {Enforcement: audit}, "stall": {Enforcement: audit}}})},
		wantAudit: []string{"stall TurnPolicy/t", "cycles TurnPolicy/t"},
	}, {
		name: "a higher precedence policy's enforcement beats a lower one's detector setting",
		cluster: []twv1.ClusterTurnPolicy{clusterPolicy("c", time.Hour, twv1.TurnPolicySpec{Enforcement: audit,
			Detectors: map[string]twv1.DetectorPolicy{"cycles": {Enforcement: audit}}})},
		local: []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Enforcement: enforce,
			Detectors: map[string]twv1.DetectorPolicy{"repetition": {Enforcement: audit}}})},
		wantAudit: []string{"repetition TurnPolicy/t"},
	}, {
		name: "a policy that says nothing of enforcement leaves the one below",
		cluster: []twv1.ClusterTurnPolicy{
			clusterPolicy("young", time.Hour, twv1.TurnPolicySpec{Detectors: map[string]twv1.DetectorPolicy{"cycles": {Enforcement: audit}, "stall": {Enforcement: audit}}}),
			clusterPolicy("old", 2*time.Hour, twv1.TurnPolicySpec{Detectors: map[string]twv1.DetectorPolicy{"stall": {Enforcement: enforce}}}),
		},
		local:     []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Guards: &twv1.Guards{StepBudget: ptr.To[int32](9)}})},
		wantAudit: []string{"cycles ClusterTurnPolicy/young"},
		want:      map[string]string{"stepBudget": "9 TurnPolicy/t"},
	}}
	defaults := shared.DefaultConfig().Guards
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policies := orderPolicies(tt.cluster, tt.local, nil)
			settings, audited := ResolveGuards(GuardInputs{Defaults: defaults, Policies: policies, Run: tt.run, Drill: tt.isDrill, DrillGuards: tt.drill})
			var names []string
			for _, s := range settings {
				names = append(names, s.Name)
				want, ok := tt.want[s.Name]
				if !ok {
					want = string(setFields(&defaults)[s.Name]) + " " + sourceDefault
					if want == " "+sourceDefault {
						want = "null " + sourceDefault
					}
				}
				if got := s.Value + " " + s.Source; got != want {
					t.Errorf("%s = %s, want %s", s.Name, got, want)
				}
			}
			if !slices.Equal(names, monitor.GuardNames()) {
				t.Errorf("guards %v, want the detector table's %v", names, monitor.GuardNames())
			}
			var gotAudit []string
			for _, a := range audited {
				gotAudit = append(gotAudit, a.Detector+" "+a.Source)
			}
			if !slices.Equal(gotAudit, tt.wantAudit) {
				t.Errorf("audit %v, want %v", gotAudit, tt.wantAudit)
			}
		})
	}
}

// Without a policy, a turn's Pod gets the guards it got before policies:
// the run's over the manager's defaults, a drill's scenario's over those.
func TestPodGuardsWithoutPolicyUnchanged(t *testing.T) {
	defaults := shared.DefaultConfig().Guards
	defaults.WorldTools = []string{"make"}
	runs := map[string]*twv1.AgentRun{
		"no guards": newRun("ns", "r"),
		"run guards": newRun("ns", "r", func(r *twv1.AgentRun) {
			r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](9), MaxCostUSD: ptr.To("1.5"), WorldTools: []string{}}
		}),
		"drill":           newRun("ns", "r", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "cycle"} }),
		"overspend drill": newRun("ns", "r", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "overspend"} }),
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			want, _, wantDrill, err := turnGuards(run, defaults)
			if err != nil {
				t.Fatal(err)
			}
			in := GuardInputs{Defaults: defaults, Run: run.Spec.Guards, Drill: run.Spec.Drill != nil}
			if sc, ok, _ := DrillScenario(run); ok {
				in.DrillGuards, _ = DrillGuards(sc)
			}
			turn := &twv1.AgentTurn{}
			turn.Spec.Guards, turn.Spec.Audit = ResolveGuards(in)
			got, _, drill, err := PodGuards(run, turn, defaults, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, want) || drill != wantDrill {
				t.Errorf("from the turn's spec.guards: %+v (drill %v), want %+v (drill %v)", got, drill, want, wantDrill)
			}
		})
	}
}

// The engine's validator judges a turn's guards: a limit can cap
// cycleRepeats under its least, and such a turn fails with the guard named.
func TestSettingsGuardsRefused(t *testing.T) {
	settings, _ := ResolveGuards(GuardInputs{
		Defaults: shared.DefaultConfig().Guards,
		Policies: orderPolicies(nil, []twv1.TurnPolicy{turnPolicy("t", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{CycleRepeats: ptr.To[int32](1)}})}, nil),
		Run:      &twv1.Guards{CycleRepeats: ptr.To[int32](4)},
	})
	_, err := settingsGuards(settings)
	var refused *GuardsRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "cycleRepeats") {
		t.Errorf("got %v, want a refusal naming cycleRepeats", err)
	}
	if _, err := settingsGuards([]twv1.GuardSetting{{Name: "stepBudget", Value: "{", Source: sourceDefault}}); !errors.As(err, &refused) {
		t.Errorf("a value that is no JSON: got %v, want a refusal", err)
	}
}

// The turn controller caps a turn's guards to the limits in force when it
// renders the Pod, whatever the turn's spec says and whoever wrote it; a
// drill's scenario guards stay on top, as resolveGuards puts them.
func TestPodGuardsCappedAtRender(t *testing.T) {
	defaults := shared.DefaultConfig().Guards
	limits := orderPolicies(nil, []twv1.TurnPolicy{turnPolicy("caps", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{
		StepBudget: ptr.To[int32](100), StallTimeout: ptr.To("5m"), MaxCostUSD: ptr.To("2.00"), CycleRepeats: ptr.To[int32](3)}})}, nil)
	spec := func(settings ...twv1.GuardSetting) *twv1.AgentTurn {
		turn := &twv1.AgentTurn{}
		turn.Spec.Guards, _ = ResolveGuards(GuardInputs{Defaults: defaults})
		for _, s := range settings {
			for i := range turn.Spec.Guards {
				if turn.Spec.Guards[i].Name == s.Name {
					turn.Spec.Guards[i] = s
				}
			}
		}
		return turn
	}
	tests := []struct {
		name string
		run  *twv1.AgentRun
		turn *twv1.AgentTurn
		want twv1.Guards // the fields checked; others are the defaults'
	}{
		{"a hand-written turn over every limit", newRun("ns", "r"), spec(
			twv1.GuardSetting{Name: "stepBudget", Value: "100000", Source: SourceRun},
			twv1.GuardSetting{Name: "stallTimeout", Value: `"0s"`, Source: SourceRun},
			twv1.GuardSetting{Name: "maxCostUSD", Value: "null", Source: SourceRun},
			twv1.GuardSetting{Name: "cycleRepeats", Value: "0", Source: SourceRun}),
			twv1.Guards{StepBudget: ptr.To[int32](100), StallTimeout: ptr.To("5m"), MaxCostUSD: ptr.To("2.00"), CycleRepeats: ptr.To[int32](3)}},
		{"a value no one can read is over the limit", newRun("ns", "r"), spec(
			twv1.GuardSetting{Name: "stallTimeout", Value: `"2562048h"`, Source: SourceRun}),
			twv1.Guards{StallTimeout: ptr.To("5m")}},
		{"under the limits: unchanged", newRun("ns", "r"), spec(
			twv1.GuardSetting{Name: "stepBudget", Value: "50", Source: SourceRun}),
			twv1.Guards{StepBudget: ptr.To[int32](50)}},
		{"a turn made before policies: the run's guards, capped", newRun("ns", "r", func(r *twv1.AgentRun) {
			r.Spec.Guards = &twv1.Guards{StepBudget: ptr.To[int32](900)}
		}), &twv1.AgentTurn{}, twv1.Guards{StepBudget: ptr.To[int32](100)}},
		{"a drill's scenario guards stay on top", newRun("ns", "r", func(r *twv1.AgentRun) {
			r.Spec.Drill = &twv1.Drill{Scenario: "cycle"}
		}), spec(twv1.GuardSetting{Name: "cycleRepeats", Value: "4", Source: sourceDrill},
			twv1.GuardSetting{Name: "stepBudget", Value: "100000", Source: sourceDrill}),
			twv1.Guards{CycleRepeats: ptr.To[int32](4), StepBudget: ptr.To[int32](100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, _, err := PodGuards(tt.run, tt.turn, defaults, limits)
			if err != nil {
				t.Fatal(err)
			}
			want := setFields(&tt.want)
			have := setFields(&got)
			for name, w := range want {
				if string(have[name]) != string(w) {
					t.Errorf("%s = %s, want %s", name, have[name], w)
				}
			}
		})
	}
}

// RenderCaps names each guard the render capped, from what to what and by
// which policy; none for a turn under the limits, and none for a drill's
// scenario guards, which stay on top.
func TestRenderCaps(t *testing.T) {
	defaults := shared.DefaultConfig().Guards
	limits := orderPolicies(nil, []twv1.TurnPolicy{turnPolicy("caps", time.Hour, twv1.TurnPolicySpec{Limits: &twv1.GuardLimits{
		StepBudget: ptr.To[int32](100), CycleRepeats: ptr.To[int32](3)}})}, nil)
	turn := func(settings ...twv1.GuardSetting) *twv1.AgentTurn {
		tt := &twv1.AgentTurn{}
		tt.Spec.Guards = settings
		return tt
	}
	for _, c := range []struct {
		name string
		run  *twv1.AgentRun
		turn *twv1.AgentTurn
		want []string
	}{
		{"over a limit", newRun("ns", "r"), turn(twv1.GuardSetting{Name: "stepBudget", Value: "1000", Source: SourceRun}),
			[]string{"stepBudget 1000 to 100 (limit of TurnPolicy/caps)"}},
		{"under the limits", newRun("ns", "r"), turn(twv1.GuardSetting{Name: "stepBudget", Value: "50", Source: SourceRun}), nil},
		{"capped already, by the same limit", newRun("ns", "r"), turn(twv1.GuardSetting{Name: "stepBudget", Value: "100", Source: "limit of TurnPolicy/caps"}), nil},
		{"a drill's scenario guard", newRun("ns", "r", func(r *twv1.AgentRun) { r.Spec.Drill = &twv1.Drill{Scenario: "cycle"} }),
			turn(twv1.GuardSetting{Name: "cycleRepeats", Value: "4", Source: sourceDrill}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RenderCaps(c.run, c.turn, defaults, limits); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
