package main

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// limitsTemplate is the limits policies (turnwatch-agentrun-limits and
// turnwatch-agentrun-cluster-limits) and their bindings, but for their
// validations.
//
//go:embed limits.yaml.tmpl
var limitsTemplate string

// celForms are the validation of a limited guard by kind, $g standing for
// the guard's name: the run's value against the policy's limit, judged
// only when the run sets or changes it. A count or a duration of 0 (off)
// is over any limit but 0, which limits nothing; a cost is compared as a
// decimal, exactly (quantity()), and a run that asks no cap is admitted
// (the controller caps it).
var celForms = map[monitor.GuardKind]string{
	monitor.GuardCount: `
  - expression: >-
      !variables.selected || variables.old.?$g == variables.guards.?$g ||
      variables.limits.?$g.orValue(0) == 0 || !variables.guards.?$g.hasValue() ||
      (variables.guards.?$g.value() != 0 && variables.guards.?$g.value() <= variables.limits.?$g.value())
    messageExpression: >-
      'spec.guards.$g: ' + (variables.guards.?$g.value() == 0 ? '0 (off)' : string(variables.guards.?$g.value())) +
      ' is over the limit ' + string(variables.limits.?$g.value()) + ' of ' + variables.policy
    reason: Invalid`,
	monitor.GuardDuration: `
  - expression: >-
      !variables.selected || variables.old.?$g == variables.guards.?$g ||
      duration(variables.limits.?$g.orValue('0s')) == duration('0s') || !variables.guards.?$g.hasValue() ||
      (duration(variables.guards.?$g.value()) != duration('0s') && duration(variables.guards.?$g.value()) <= duration(variables.limits.?$g.value()))
    messageExpression: >-
      'spec.guards.$g: ' + variables.guards.?$g.value() + (duration(variables.guards.?$g.value()) == duration('0s') ? ' (off)' : '') +
      ' is over the limit ' + variables.limits.?$g.value() + ' of ' + variables.policy
    reason: Invalid`,
	monitor.GuardCost: `
  - expression: >-
      !variables.selected || variables.old.?$g == variables.guards.?$g ||
      !variables.limits.?$g.hasValue() || !variables.guards.?$g.hasValue() ||
      !quantity(variables.guards.?$g.value()).isGreaterThan(quantity(variables.limits.?$g.value()))
    messageExpression: >-
      'spec.guards.$g: ' + variables.guards.?$g.value() + ' is over the limit ' + variables.limits.?$g.value() + ' of ' + variables.policy
    reason: Invalid`,
}

// validations are the limits policies' validations: one per limited
// guard, in table order, at the indent of spec.validations' items.
func validations(limited []monitor.Guard) (string, error) {
	var b strings.Builder
	for _, gd := range limited {
		form, ok := celForms[gd.Kind]
		if !ok {
			return "", fmt.Errorf("guard %s: no validation for its kind", gd.Name)
		}
		b.WriteString(strings.ReplaceAll(form, "$g", gd.Name))
	}
	return strings.TrimPrefix(b.String(), "\n"), nil
}

// celStrings is a CEL list literal of strings, which must hold no quote
// or backslash (env var names).
func celStrings(ss []string) (string, error) {
	for _, s := range ss {
		if strings.ContainsAny(s, `'\"`) {
			return "", fmt.Errorf("%q cannot go in a CEL literal", s)
		}
	}
	return "['" + strings.Join(ss, "', '") + "']", nil
}

// limitsPolicies is validatingadmissionpolicy_limits.yaml: the limits
// policies, and the gateway policies with the CLIs' key env vars keys.
func limitsPolicies(limited []monitor.Guard, keys []string) ([]byte, error) {
	v, err := validations(limited)
	if err != nil {
		return nil, err
	}
	t, err := template.New("limits.yaml.tmpl").Option("missingkey=error").Parse(limitsTemplate)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	k, err := celStrings(keys)
	if err != nil {
		return nil, err
	}
	formats, err := celStrings(agents.Formats())
	if err != nil {
		return nil, err
	}
	data := map[string]string{"Validations": v, "KeyEnvs": k, "Formats": formats,
		"FormatNames": strings.Join(agents.Formats(), ", "),
		"Params":      twv1.AttachParams, "Required": render.ParamModelRequired, "Upstream": render.ParamModelUpstream,
		"Token": render.ParamModelToken, "LabelWatch": twv1.LabelWatch, "LabelAgentContainer": twv1.LabelAgentContainer,
		"LabelRun": twv1.LabelRun, "LabelAttach": twv1.LabelAttach, "AttachEnabled": twv1.AttachEnabled}
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}
