package turnpolicy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// A turn's effective guards (docs/policies.md#precedence) are resolved once,
// when the run controller creates the turn, and written on its spec with
// the source of each value; the turn controller renders the Pod from them,
// capped to the limits in force then (podGuards).

// Sources of a guard's value (twv1.GuardSetting.Source) besides a policy's
// "TurnPolicy/NAME" or "ClusterTurnPolicy/NAME".
const (
	sourceDefault = "default"  // the manager's config (Config.Guards)
	SourceRun     = "AgentRun" // the run's spec.guards
	sourceDrill   = "drill"    // a drill scenario's guards
	// sourceLimitOf prefixes the source of a value a policy's limit capped:
	// "limit of TurnPolicy/NAME".
	sourceLimitOf = "limit of "
)

// GuardInputs are what a turn's guards are resolved from.
type GuardInputs struct {
	// Defaults are the manager's (Config.Guards).
	Defaults twv1.Guards
	// Policies apply to the run's namespace, lowest precedence first
	// (orderPolicies).
	Policies []AppliedPolicy
	// Run is the run's spec.guards.
	Run *twv1.Guards
	// Drill says the run is a drill; DrillGuards are its scenario's.
	Drill       bool
	DrillGuards *twv1.Guards
}

// ResolveGuards is a turn's effective guards, every guard of the detector
// table in table order, and its audited detectors. Each level merges over
// the one below, field by field: defaults, the policies (lowest precedence
// first, so the oldest of a level wins), the run; then every policy's
// limits cap the result; then a drill's scenario guards go on top, as they
// did before policies (a drill must trip its detector).
func ResolveGuards(in GuardInputs) ([]twv1.GuardSetting, []twv1.AuditedDetector) {
	levels := []guardLevel{{sourceDefault, &in.Defaults}}
	for _, p := range in.Policies {
		levels = append(levels, guardLevel{p.Source, p.Spec.Guards})
	}
	levels = append(levels, guardLevel{SourceRun, in.Run})
	settings := mergeLevels(levels)
	capToLimits(settings, in.Policies)
	if in.Drill {
		overDrill(settings, in.DrillGuards)
		return settings, nil // a drill proves enforcement: never audited
	}
	return settings, auditedDetectors(in.Policies)
}

// guardLevel is one level's guards and the source it names.
type guardLevel struct {
	source string
	guards *twv1.Guards
}

// mergeLevels is every guard's value from the highest level that sets it;
// a guard none sets has the value null (the engine's zero: maxCostUSD no
// cap, worldTools none) from the defaults.
func mergeLevels(levels []guardLevel) []twv1.GuardSetting {
	set := make([]map[string]json.RawMessage, len(levels))
	for i, l := range levels {
		set[i] = setFields(l.guards)
	}
	var out []twv1.GuardSetting
	for _, name := range monitor.GuardNames() {
		s := twv1.GuardSetting{Name: name, Value: "null", Source: sourceDefault}
		for i, l := range levels {
			if v, ok := set[i][name]; ok {
				s.Value, s.Source = string(v), l.source
			}
		}
		out = append(out, s)
	}
	return out
}

// overDrill sets the drill scenario's guards over settings.
func overDrill(settings []twv1.GuardSetting, drill *twv1.Guards) {
	set := setFields(drill)
	for i := range settings {
		if v, ok := set[settings[i].Name]; ok {
			settings[i].Value, settings[i].Source = string(v), sourceDrill
		}
	}
}

// setFields are the fields a struct of optional fields (twv1.Guards,
// twv1.GuardLimits) sets, by JSON name, as compact JSON. A field is set when
// it is not nil (not zero), as Guards.Merge has it: an empty worldTools
// list is set.
// The JSON names are the guards' (hack/apitables writes both types from the
// detector table).
func setFields[T any](s *T) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if s == nil {
		return out
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if b, err := json.Marshal(f.Interface()); err == nil {
			out[name] = b
		}
	}
	return out
}

// capToLimits caps each value over a policy's limit to the limit: every
// policy's limits hold, so the strictest wins; among equal limits the
// source names the policy of highest precedence.
func capToLimits(settings []twv1.GuardSetting, policies []AppliedPolicy) {
	kinds := guardKinds()
	for i := len(policies) - 1; i >= 0; i-- {
		p := policies[i]
		for name, lim := range setFields(p.Spec.Limits) {
			for j := range settings {
				s := &settings[j]
				if s.Name == name && monitor.OverLimit(kinds[name], json.RawMessage(s.Value), lim) {
					s.Value, s.Source = string(lim), sourceLimitOf+p.Source
				}
			}
		}
	}
}

// guardKinds are the guards' kinds by name.
func guardKinds() map[string]monitor.GuardKind {
	out := map[string]monitor.GuardKind{}
	for _, gd := range monitor.AllGuards() {
		out[gd.Name] = gd.Kind
	}
	return out
}

// auditedDetectors are the detectors whose enforcement resolves to audit,
// in table order, each with the policy that said so. A policy's setting
// for a detector is its spec.detectors entry, else its spec.enforcement;
// a higher-precedence policy's setting wins.
func auditedDetectors(policies []AppliedPolicy) []twv1.AuditedDetector {
	var out []twv1.AuditedDetector
	for _, d := range monitor.Detectors() {
		mode, source := twv1.EnforcementEnforce, ""
		for _, p := range policies {
			if m := p.Spec.Enforcement; m != "" {
				mode, source = m, p.Source
			}
			if dp, ok := p.Spec.Detectors[d.Name]; ok && dp.Enforcement != "" {
				mode, source = dp.Enforcement, p.Source
			}
		}
		if mode == twv1.EnforcementAudit {
			out = append(out, twv1.AuditedDetector{Detector: d.Name, Source: source})
		}
	}
	return out
}

// PodGuards are the guards a turn's Pod runs with: its spec.guards, or for
// a turn created before policies the run's over the manager's defaults
// (turnGuards); capped to the limits of policies, those in force when the
// Pod is rendered; with the drill's scenario on top, if the run is one, as
// ResolveGuards has it. The cap holds a turn to the limits whoever wrote it
// and whenever: one written by hand before turnwatch-agentturn-manager
// refused that, or one made before a limit was lowered.
func PodGuards(run *twv1.AgentRun, turn *twv1.AgentTurn, defaults twv1.Guards, policies []AppliedPolicy) (twv1.Guards, scriptedmodel.Scenario, bool, error) {
	settings, sc, drill, err := podSettings(run, turn, defaults)
	if err != nil {
		return twv1.Guards{}, sc, drill, err
	}
	capped, err := capRender(settings, sc, drill, policies)
	if err != nil {
		return twv1.Guards{}, sc, drill, err
	}
	g, err := settingsGuards(capped)
	return g, sc, drill, err
}

// podSettings are a turn's guard settings before the render caps them: its
// spec.guards, or for a turn created before policies the run's over the
// manager's defaults (turnGuards, the drill's scenario included).
func podSettings(run *twv1.AgentRun, turn *twv1.AgentTurn, defaults twv1.Guards) ([]twv1.GuardSetting, scriptedmodel.Scenario, bool, error) {
	if len(turn.Spec.Guards) == 0 {
		merged, sc, drill, err := turnGuards(run, defaults)
		return mergeLevels([]guardLevel{{sourceDefault, &merged}}), sc, drill, err
	}
	sc, drill, err := DrillScenario(run)
	return turn.Spec.Guards, sc, drill, err
}

// capRender is a copy of settings capped to policies' limits, with a
// drill's scenario guards on top.
func capRender(settings []twv1.GuardSetting, sc scriptedmodel.Scenario, drill bool, policies []AppliedPolicy) ([]twv1.GuardSetting, error) {
	out := slices.Clone(settings)
	capToLimits(out, policies)
	if drill {
		over, err := DrillGuards(sc)
		if err != nil {
			return nil, err
		}
		overDrill(out, over)
	}
	return out, nil
}

// RenderCaps describes each guard of the turn that the limits in force cap
// when its Pod is rendered ("stepBudget 1000 to 100 (limit of
// TurnPolicy/team)"); none for a turn the run controller made under the
// same limits.
func RenderCaps(run *twv1.AgentRun, turn *twv1.AgentTurn, defaults twv1.Guards, policies []AppliedPolicy) []string {
	settings, sc, drill, err := podSettings(run, turn, defaults)
	if err != nil {
		return nil
	}
	capped, err := capRender(settings, sc, drill, policies)
	if err != nil {
		return nil
	}
	var out []string
	for i, s := range capped {
		if s.Value != settings[i].Value && strings.HasPrefix(s.Source, sourceLimitOf) {
			out = append(out, fmt.Sprintf("%s %s to %s (%s)", s.Name, settings[i].Value, s.Value, s.Source))
		}
	}
	return out
}

// GuardsRefusedError is a turn whose spec.guards the engine refuses (a
// limit can cap a value below a guard's least, cycleRepeats 1); the turn
// fails as infra with the message.
type GuardsRefusedError struct{ err error }

func (e *GuardsRefusedError) Error() string { return "the turn's guards: " + e.err.Error() }

// settingsGuards reads a turn's spec.guards as one JSON object, checked by
// the engine's own validator (monitor.ParseGuards).
func settingsGuards(settings []twv1.GuardSetting) (twv1.Guards, error) {
	obj := make(map[string]json.RawMessage, len(settings))
	for _, s := range settings {
		obj[s.Name] = json.RawMessage(s.Value)
	}
	var g twv1.Guards
	b, err := json.Marshal(obj)
	if err == nil {
		_, err = monitor.ParseGuards(b)
	}
	if err == nil {
		err = json.Unmarshal(b, &g)
	}
	if err != nil {
		return g, &GuardsRefusedError{err: err}
	}
	return g, nil
}
