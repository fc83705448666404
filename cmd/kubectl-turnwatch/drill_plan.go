package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// The drill's plan, before it talks to the API: the run the manifest holds,
// the scenarios to play, and one copy of the run per scenario. A manifest
// the drill cannot use is refused with a refusal (exit 2).

// refusal is a manifest or flag the drill cannot use.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

func refusef(format string, args ...any) error { return refusal{fmt.Sprintf(format, args...)} }

// isRefusal says whether err refuses the drill's input.
func isRefusal(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// maxName is the longest AgentRun name: its name is a label value.
const maxName = 63

// readRun reads the one object of a manifest (YAML or JSON): an AgentRun,
// refusing fields the API does not know (the copies must be the run as
// written), or a workload, read as the AgentRun that runs its pod template
// (workloadRun).
func readRun(r io.Reader) (*twv1.AgentRun, error) {
	docs, err := documents(r)
	if err != nil {
		return nil, refusef("reading the manifest: %v", err)
	}
	if len(docs) != 1 {
		return nil, refusef("the manifest holds %d objects; the drill takes one: %s", len(docs), acceptedKinds())
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(docs[0], &tm); err != nil {
		return nil, refusef("reading the manifest: %v", err)
	}
	if w, ok := lookupWorkload(tm); ok {
		return workloadRun(w, docs[0])
	}
	if tm.APIVersion != twv1.GroupVersion.String() || tm.Kind != "AgentRun" {
		return nil, refusef("the manifest holds kind %q of apiVersion %q; the drill takes %s", tm.Kind, tm.APIVersion, acceptedKinds())
	}
	var run twv1.AgentRun
	if err := yaml.UnmarshalStrict(docs[0], &run); err != nil {
		return nil, refusef("the manifest's AgentRun: %v", err)
	}
	return &run, nil
}

// documents are the non-empty documents of a YAML stream.
func documents(r io.Reader) ([][]byte, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			docs = append(docs, bytes.TrimSpace(doc))
		}
	}
}

// runCheck says why the drill cannot copy the run, if it cannot.
type runCheck func(run *twv1.AgentRun) (message string, failed bool)

// runChecks are the drill's checks of the manifest's run, in order.
var runChecks = []runCheck{checkNamed, checkFormat, checkNotDrill}

func checkNamed(run *twv1.AgentRun) (string, bool) {
	return "the AgentRun has no metadata.name: the drill names its copies after it", run.Name == ""
}

func checkFormat(run *twv1.AgentRun) (string, bool) {
	return fmt.Sprintf("the AgentRun's spec.format is %q: a drill needs a named format (%s), which says which model endpoint its CLI reads",
		run.Spec.Format, strings.Join(formats(), ", ")), run.Spec.Format == "" || run.Spec.Format == twv1.FormatAuto
}

func checkNotDrill(run *twv1.AgentRun) (string, bool) {
	return "the AgentRun is a drill already (spec.drill): drill the run it was copied from", run.Spec.Drill != nil
}

// checkRun runs the checks; the first that fails refuses the run.
func checkRun(run *twv1.AgentRun) error {
	for _, check := range runChecks {
		if msg, failed := check(run); failed {
			return refusal{msg}
		}
	}
	return nil
}

// formats are the formats a drill can point at the scripted model.
func formats() []string { return slices.Sorted(maps.Keys(scriptedmodel.Endpoints)) }

// scenarioAll picks every scenario that applies to the run's format.
const scenarioAll = "all"

// pickScenarios are the scenarios to play, in the table's order: all that
// apply to format, or the one named.
func pickScenarios(format, pick string) ([]scriptedmodel.Scenario, error) {
	if pick == scenarioAll {
		var out []scriptedmodel.Scenario
		for _, sc := range scriptedmodel.Scenarios {
			if sc.Applies(format) {
				out = append(out, sc)
			}
		}
		return out, nil
	}
	sc, err := scriptedmodel.Lookup(pick)
	if err != nil {
		return nil, refusef("--scenario: %v, or %s", err, scenarioAll)
	}
	if !sc.Applies(format) {
		return nil, refusef("--scenario %s plays only to %s, and the run's format is %s", sc.Name, strings.Join(sc.Formats, ", "), format)
	}
	return []scriptedmodel.Scenario{sc}, nil
}

// drillName is the name of the run's copy that plays scenario:
// NAME-drill-SCENARIO, lowercased. A name too long for that keeps the
// suffix whole and a hash of the whole name after as much of it as fits,
// so that the names stay unique per run and per scenario.
func drillName(name, scenario string) string {
	suffix := "-drill-" + strings.ToLower(scenario)
	if len(name)+len(suffix) <= maxName {
		return name + suffix
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	tag := fmt.Sprintf("-%08x", h.Sum32())
	cut := strings.TrimRight(name[:maxName-len(suffix)-len(tag)], "-.")
	return cut + tag + suffix
}

// drillCopy is the run, named for scenario and labelled with it, in ns,
// that plays scenario and is deleted ttl seconds after it ends. Nothing
// else of the run changes.
func drillCopy(src *twv1.AgentRun, scenario, ns string, ttl int32) *twv1.AgentRun {
	run := &twv1.AgentRun{
		TypeMeta: src.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: drillName(src.Name, scenario), Namespace: ns,
			Labels: map[string]string{}, Annotations: src.Annotations,
		},
		Spec: *src.Spec.DeepCopy(),
	}
	for k, v := range src.Labels {
		run.Labels[k] = v
	}
	run.Labels[twv1.LabelDrill] = scenario
	run.Spec.Drill = &twv1.Drill{Scenario: scenario}
	run.Spec.TTLSecondsAfterFinished = &ttl
	return run
}
