package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// obj is a JSON object, to build manifests with.
type obj = map[string]any

// workloadManifest is a manifest of kind whose pod template (at the kind's
// place) has labels, annotations and containers.
func workloadManifest(t *testing.T, kind string, labels, annotations obj, containers []any) string {
	t.Helper()
	tmpl := obj{"metadata": obj{"labels": labels, "annotations": annotations}, "spec": obj{"containers": containers, "restartPolicy": "Never"}}
	meta := obj{"name": "nightly", "namespace": "team", "labels": obj{"app": "nightly"}}
	var m obj
	switch kind {
	case "Job":
		m = obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": obj{"backoffLimit": 2, "template": tmpl}}
	case "CronJob":
		m = obj{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": obj{"schedule": "0 3 * * *",
			"jobTemplate": obj{"spec": obj{"template": tmpl}}}}
	case "Pod":
		meta["labels"], meta["annotations"] = labels, annotations
		m = obj{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}
	case "Sandbox", "Sandbox/v1beta1":
		version := "v1alpha1"
		if kind == "Sandbox/v1beta1" {
			version = "v1beta1"
		}
		// A Sandbox's other fields (lifecycle, volumeClaimTemplates) are read past.
		m = obj{"apiVersion": "agents.x-k8s.io/" + version, "kind": "Sandbox", "metadata": meta, "spec": obj{"podTemplate": tmpl,
			"shutdownPolicy": "Delete", "volumeClaimTemplates": []any{obj{"metadata": obj{"name": "ws"}, "spec": obj{}}}}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	agentC  = obj{"name": "agent", "image": "agent-claude:2"}
	helperC = obj{"name": "proxy", "image": "proxy:1"}
)

// Each workload reads as the AgentRun that runs its pod template: its name
// and namespace, the format of its watch label, the agent container of its
// label or the first, the guards of its annotation; the template keeps all
// but those three.
func TestWorkloadRun(t *testing.T) {
	for _, kind := range []string{"Job", "CronJob", "Pod", "Sandbox", "Sandbox/v1beta1"} {
		tests := []struct {
			name        string
			labels, ann obj
			containers  []any
			agent       string
			guards      *twv1.Guards
		}{
			{"format only", obj{twv1.LabelWatch: "claude", "team": "a"}, nil, []any{agentC, helperC}, "agent", nil},
			{"agent container and guards", obj{twv1.LabelWatch: "claude", twv1.LabelAgentContainer: "agent", "team": "a"},
				obj{twv1.AnnotationGuards: `{"stepBudget": 64, "maxCostUSD": "1.00"}`, "note": "kept"}, []any{helperC, agentC}, "agent",
				&twv1.Guards{StepBudget: ptr(int32(64)), MaxCostUSD: ptr("1.00")}},
		}
		for _, tt := range tests {
			run, err := readRun(strings.NewReader(workloadManifest(t, kind, tt.labels, tt.ann, tt.containers)))
			if err != nil {
				t.Errorf("%s, %s: %v", kind, tt.name, err)
				continue
			}
			if err := checkRun(run); err != nil {
				t.Errorf("%s, %s: the run is refused: %v", kind, tt.name, err)
			}
			tmpl := run.Spec.Template
			if run.Name != "nightly" || run.Namespace != "team" || run.Spec.Format != twv1.FormatClaude || run.Spec.AgentContainer != tt.agent ||
				!reflect.DeepEqual(run.Spec.Guards, tt.guards) || run.Spec.Prompt == "" || run.Spec.Drill != nil {
				t.Errorf("%s, %s: run %+v, spec %+v", kind, tt.name, run.ObjectMeta, run.Spec)
			}
			if !reflect.DeepEqual(tmpl.Labels, map[string]string{"team": "a"}) || len(tmpl.Spec.Containers) != len(tt.containers) ||
				tmpl.Annotations[twv1.AnnotationGuards] != "" || (tt.ann != nil && tmpl.Annotations["note"] != "kept") {
				t.Errorf("%s, %s: template %+v %+v", kind, tt.name, tmpl.ObjectMeta, tmpl.Spec.Containers)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A workload the drill cannot run is refused, saying why.
func TestWorkloadRunRefused(t *testing.T) {
	watch := obj{twv1.LabelWatch: "codex"}
	tests := []struct {
		name        string
		kind        string
		labels, ann obj
		containers  []any
		refused     string
	}{
		{"no containers", "Job", watch, nil, []any{}, "the Job's pod template (spec.template) has no containers"},
		{"a Pod with no containers", "Pod", watch, nil, nil, "the Pod has no containers"},
		{"no watch label", "CronJob", nil, nil, []any{agentC},
			"the CronJob's pod template (spec.jobTemplate.spec.template) has no label turnwatch.dev/watch: a drill needs a named format there (claude, codex, gemini, opencode, pi)"},
		{"auto", "Sandbox", obj{twv1.LabelWatch: "auto"}, nil, []any{agentC},
			"the Sandbox's pod template (spec.podTemplate) is labelled turnwatch.dev/watch=auto: a drill needs a named format"},
		{"an unknown format", "Pod", obj{twv1.LabelWatch: "aider"}, nil, []any{agentC}, "the Pod is labelled turnwatch.dev/watch=aider: a drill needs a named format"},
		{"no such agent container", "Job", obj{twv1.LabelWatch: "pi", twv1.LabelAgentContainer: "worker"}, nil, []any{agentC, helperC},
			"labelled turnwatch.dev/agent-container=worker, and has no container of that name"},
		{"an unknown guard", "Job", watch, obj{twv1.AnnotationGuards: `{"maxSteps": 64}`}, []any{agentC},
			"the annotation turnwatch.dev/guards of the Job's pod template (spec.template): guards: maxSteps: unknown guard"},
		{"guards not JSON", "Pod", watch, obj{twv1.AnnotationGuards: `maxSteps: 64`}, []any{agentC}, "the annotation turnwatch.dev/guards of the Pod: guards: not a JSON object"},
		{"a bad guard value", "Sandbox", watch, obj{twv1.AnnotationGuards: `{"stepBudget": -1}`}, []any{agentC}, "the annotation turnwatch.dev/guards of the Sandbox's pod template (spec.podTemplate): guards: stepBudget"},
	}
	for _, tt := range tests {
		_, err := readRun(strings.NewReader(workloadManifest(t, tt.kind, tt.labels, tt.ann, tt.containers)))
		if !isRefusal(err) || !strings.Contains(err.Error(), tt.refused) {
			t.Errorf("%s: %v, want a refusal saying %q", tt.name, err, tt.refused)
		}
	}
	for _, tt := range []struct{ name, manifest, refused string }{
		{"a field a Job does not know", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"templat":{}}}`, `the manifest's Job: error unmarshaling JSON: while decoding JSON: json: unknown field "templat"`},
		{"no name", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"generateName":"j-"},"spec":{"template":{"metadata":{"labels":{"turnwatch.dev/watch":"pi"}},"spec":{"containers":[{"name":"a"}]}}}}`,
			"the Job has no metadata.name: the drill names its runs after it"},
	} {
		_, err := readRun(strings.NewReader(tt.manifest))
		if !isRefusal(err) || !strings.Contains(err.Error(), tt.refused) {
			t.Errorf("%s: %v, want a refusal saying %q", tt.name, err, tt.refused)
		}
	}
}
