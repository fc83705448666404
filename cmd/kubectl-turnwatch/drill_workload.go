package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// The drill takes, besides an AgentRun, the workloads a team attaches
// (docs/attach.md): it drills the workload's pod template as it drills an
// AgentRun with that template, whose format, agent container and guards are
// the template's attach label, label and annotation.

// workload is a kind the drill takes besides an AgentRun, and where its pod
// template is.
type workload struct {
	apiVersion, kind string
	// where is the pod template's place in the manifest, for messages;
	// empty for a Pod, its own template.
	where string
	// read reads the manifest: the object's metadata and its pod template.
	read func(doc []byte) (metav1.ObjectMeta, corev1.PodTemplateSpec, error)
}

// workloads are the kinds the drill takes besides an AgentRun.
var workloads = []workload{
	{"batch/v1", "Job", "spec.template", readTyped(func(j *batchv1.Job) (metav1.ObjectMeta, corev1.PodTemplateSpec) {
		return j.ObjectMeta, j.Spec.Template
	})},
	{"batch/v1", "CronJob", "spec.jobTemplate.spec.template", readTyped(func(cj *batchv1.CronJob) (metav1.ObjectMeta, corev1.PodTemplateSpec) {
		return cj.ObjectMeta, cj.Spec.JobTemplate.Spec.Template
	})},
	{"v1", "Pod", "", readTyped(func(p *corev1.Pod) (metav1.ObjectMeta, corev1.PodTemplateSpec) {
		return p.ObjectMeta, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}
	})},
	{"agents.x-k8s.io/v1alpha1", "Sandbox", "spec.podTemplate", readSandbox},
	// v1beta1 is the version agent-sandbox v1.0 serves; its pod template
	// is v1alpha1's.
	{"agents.x-k8s.io/v1beta1", "Sandbox", "spec.podTemplate", readSandbox},
}

// lookupWorkload is the workload of the manifest's apiVersion and kind.
func lookupWorkload(tm metav1.TypeMeta) (workload, bool) {
	for _, w := range workloads {
		if w.apiVersion == tm.APIVersion && w.kind == tm.Kind {
			return w, true
		}
	}
	return workload{}, false
}

// workloadKinds names the workloads the drill takes, from the table, each
// kind with its versions: "Job (batch/v1), ... or Sandbox (V1, V2)".
func workloadKinds() string {
	var kinds []string
	versions := map[string][]string{}
	for _, w := range workloads {
		if versions[w.kind] == nil {
			kinds = append(kinds, w.kind)
		}
		versions[w.kind] = append(versions[w.kind], w.apiVersion)
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = fmt.Sprintf("%s (%s)", k, strings.Join(versions[k], ", "))
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// acceptedKinds names what the drill takes.
func acceptedKinds() string {
	return fmt.Sprintf("an AgentRun (%s), or a %s", twv1.GroupVersion, workloadKinds())
}

// readTyped reads a manifest of a kind Kubernetes serves, refusing fields
// the kind does not know, as the AgentRun's are.
func readTyped[T any](get func(*T) (metav1.ObjectMeta, corev1.PodTemplateSpec)) func([]byte) (metav1.ObjectMeta, corev1.PodTemplateSpec, error) {
	return func(doc []byte) (metav1.ObjectMeta, corev1.PodTemplateSpec, error) {
		var obj T
		if err := yaml.UnmarshalStrict(doc, &obj); err != nil {
			return metav1.ObjectMeta{}, corev1.PodTemplateSpec{}, err
		}
		meta, tmpl := get(&obj)
		return meta, tmpl, nil
	}
}

// sandbox is the part of an agent-sandbox Sandbox (sigs.k8s.io/agent-sandbox,
// api/v1alpha1 and api/v1beta1) that the drill reads: spec.podTemplate,
// whose metadata holds labels and annotations and whose spec is a PodSpec.
// The module is no dependency of turnwatch's, so the Sandbox's other fields
// are not read and not checked.
type sandbox struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PodTemplate corev1.PodTemplateSpec `json:"podTemplate"`
	} `json:"spec"`
}

func readSandbox(doc []byte) (metav1.ObjectMeta, corev1.PodTemplateSpec, error) {
	var s sandbox
	err := yaml.Unmarshal(doc, &s)
	return s.ObjectMeta, s.Spec.PodTemplate, err
}

// workloadObject is a workload's manifest as read.
type workloadObject struct {
	workload
	meta metav1.ObjectMeta
	tmpl corev1.PodTemplateSpec
}

// what names the pod template in messages: "the Job's pod template
// (spec.template)", "the Pod".
func (o *workloadObject) what() string {
	if o.where == "" {
		return "the " + o.kind
	}
	return fmt.Sprintf("the %s's pod template (%s)", o.kind, o.where)
}

// workloadCheck says why the drill cannot run a workload, if it cannot.
type workloadCheck func(o *workloadObject) (message string, failed bool)

// workloadChecks are the drill's checks of a workload, in order; then the
// AgentRun made of it passes the run's checks (runChecks).
var workloadChecks = []workloadCheck{checkWorkloadNamed, checkContainers, checkWatchFormat, checkAgentContainer}

func checkWorkloadNamed(o *workloadObject) (string, bool) {
	return fmt.Sprintf("the %s has no metadata.name: the drill names its runs after it", o.kind), o.meta.Name == ""
}

func checkContainers(o *workloadObject) (string, bool) {
	return o.what() + " has no containers", len(o.tmpl.Spec.Containers) == 0
}

// checkWatchFormat: the label attach reads the format from must name one
// the drill can point at the scripted model (auto cannot, as checkFormat).
func checkWatchFormat(o *workloadObject) (string, bool) {
	f, ok := o.tmpl.Labels[twv1.LabelWatch]
	has := slices.Contains(formats(), f) // auto is none of them
	said := fmt.Sprintf("is labelled %s=%s", twv1.LabelWatch, f)
	if !ok {
		said = "has no label " + twv1.LabelWatch
	}
	return fmt.Sprintf("%s %s: a drill needs a named format there (%s), which says which model endpoint its CLI reads",
		o.what(), said, strings.Join(formats(), ", ")), !has
}

func checkAgentContainer(o *workloadObject) (string, bool) {
	name, ok := o.tmpl.Labels[twv1.LabelAgentContainer]
	for _, c := range o.tmpl.Spec.Containers {
		if c.Name == name {
			return "", false
		}
	}
	return fmt.Sprintf("%s is labelled %s=%s, and has no container of that name", o.what(), twv1.LabelAgentContainer, name), ok
}

// workloadRun is the AgentRun the drill copies for a workload: the
// workload's name and namespace, its pod template, the format, agent
// container and guards its attach label, label and annotation give (the
// first container when the label names none). The template loses those
// three: its Pods are the run's, which turnwatch renders itself, and which
// attach must not inject a second time.
func workloadRun(w workload, doc []byte) (*twv1.AgentRun, error) {
	meta, tmpl, err := w.read(doc)
	if err != nil {
		return nil, refusef("the manifest's %s: %v", w.kind, err)
	}
	o := &workloadObject{workload: w, meta: meta, tmpl: tmpl}
	for _, check := range workloadChecks {
		if msg, failed := check(o); failed {
			return nil, refusal{msg}
		}
	}
	guards, err := annotationGuards(tmpl.Annotations[twv1.AnnotationGuards])
	if err != nil {
		return nil, refusef("the annotation %s of %s: %v", twv1.AnnotationGuards, o.what(), err)
	}
	agent := tmpl.Labels[twv1.LabelAgentContainer]
	if agent == "" {
		agent = tmpl.Spec.Containers[0].Name
	}
	run := &twv1.AgentRun{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "AgentRun"},
		ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace},
		Spec: twv1.AgentRunSpec{
			Format: twv1.Format(tmpl.Labels[twv1.LabelWatch]),
			// The agent's prompt is in its command; the run needs one.
			Prompt:         fmt.Sprintf("the prompt of %s %s, in its command", w.kind, meta.Name),
			Template:       *tmpl.DeepCopy(),
			AgentContainer: agent,
			Guards:         guards,
		},
	}
	t := &run.Spec.Template.ObjectMeta
	t.Labels = without(t.Labels, twv1.LabelWatch, twv1.LabelAgentContainer)
	t.Annotations = without(t.Annotations, twv1.AnnotationGuards)
	return run, nil
}

// annotationGuards reads the guards annotation as the run's guards: a JSON
// object of guard names, checked by the engine's own validator; none when
// the annotation is not set.
func annotationGuards(text string) (*twv1.Guards, error) {
	if text == "" {
		return nil, nil
	}
	if _, err := monitor.ParseGuards([]byte(text)); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var g twv1.Guards
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	return &g, nil
}

// without is a copy of m without keys; nil when nothing is left.
func without(m map[string]string, keys ...string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
