package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Attach (docs/attach.md): the admission policy turnwatch-attach injects
// into a Pod that turnwatch did not create the sidecar a turn's Pod gets.
// The container, its mounts and its volumes are built here by the same
// functions as RenderPod's (sidecarShape, tokenVolumeSource,
// addSidecarState) and written into the policy as CEL literals
// (AttachPolicy, `make generate`); what a turn's Pod takes from its run,
// an attached Pod's sidecar takes from the Pod (the format, the agent
// container, the guards annotation) or from its namespace: the keys of the
// ConfigMap turnwatch-attach (twv1.AttachParams), the policy's parameters,
// which the manager writes from the same RenderOptions (AttachParams).

// Keys of the ConfigMap turnwatch-attach.
const (
	ParamImage           = "image"
	ParamGuards          = "guards"
	ParamLimits          = "limits"
	ParamAudit           = "audit"
	ParamPrices          = "prices"
	ParamBudgetLeftUSD   = "budgetLeftUSD"
	ParamBudget          = "budget"
	ParamProgressSeconds = "progressSeconds"
)

// attachResources are the sidecar's resources the ConfigMap may set, each
// under the key "requests.NAME" or "limits.NAME".
var attachResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// AttachNamespace is what an attached Pod's sidecar takes from its
// namespace, resolved by the manager: the namespace's guards (the
// defaults and its policies, capped), the strictest limit of each guard
// (a JSON object), and the detectors its policies audit.
type AttachNamespace struct {
	Guards  []byte
	Limits  []byte
	Audit   []string
	Gateway AttachGateway
}

// AttachParams is the data of a namespace's ConfigMap turnwatch-attach:
// the values RenderPod takes from o, and ns's.
func AttachParams(o RenderOptions, ns AttachNamespace) map[string]string {
	d := map[string]string{
		ParamImage:  o.SidecarImage,
		ParamGuards: string(ns.Guards),
		ParamLimits: string(ns.Limits),
		ParamAudit:  strings.Join(ns.Audit, ","),
		ParamPrices: string(o.Prices),
	}
	if o.BudgetLeftUSD != "" {
		d[ParamBudgetLeftUSD], d[ParamBudget] = o.BudgetLeftUSD, o.Budget
	}
	if o.Freshness > 0 {
		d[ParamProgressSeconds] = shared.ProgressEnv(o.Freshness).Value
	}
	ns.Gateway.params(d)
	nudgeParams(ns.Guards, d)
	for _, r := range attachResources {
		if q, ok := o.Resources.Requests[r]; ok {
			d["requests."+string(r)] = q.String()
		}
		if q, ok := o.Resources.Limits[r]; ok {
			d["limits."+string(r)] = q.String()
		}
	}
	return d
}

// attachEnv is an attached Pod's sidecar env: the names a turn's sidecar
// has (turnSidecarEnv, in its order), each with the CEL expression of its
// value; a name with an empty expression keeps the value of the env that
// addSidecarState set.
func attachEnv() [][2]string {
	param := func(k string) string { return "params.data[?'" + k + "'].orValue('')" }
	return [][2]string{
		{protocol.EnvFormat, "object.metadata.labels['" + twv1.LabelWatch + "']"},
		{protocol.EnvGuards, param(ParamGuards)},
		{protocol.EnvGuardsOverride, "object.metadata.?annotations[?'" + twv1.AnnotationGuards + "'].orValue('')"},
		{protocol.EnvGuardLimits, param(ParamLimits)},
		{protocol.EnvAudit, param(ParamAudit)},
		{protocol.EnvPrices, param(ParamPrices)},
		{protocol.EnvPriorCostUSD, "'0'"},
		{protocol.EnvPodName, ""},
		{protocol.EnvPodNamespace, ""},
		{protocol.EnvAgentContainer, "object.metadata.?labels[?'" + twv1.LabelAgentContainer + "'].orValue(object.spec.containers[0].name)"},
		{protocol.EnvBudgetLeftUSD, param(ParamBudgetLeftUSD)},
		{protocol.EnvBudget, param(ParamBudget)},
		{protocol.EnvRunName, "''"},
		{protocol.EnvRunUID, "''"},
		{protocol.EnvPriorSteps, "'0'"},
		{protocol.EnvProgressPeriod, param(ParamProgressSeconds)},
		{protocol.EnvStateDir, ""},
	}
}

// attachSpec is the part of an attached Pod that the policy adds: the
// sidecar first among the init containers, and its volumes.
func attachSpec() corev1.PodSpec {
	spec := corev1.PodSpec{InitContainers: []corev1.Container{sidecarShape(RenderOptions{})}}
	spec.InitContainers[0].Env = []corev1.EnvVar{
		{Name: protocol.EnvPodName, ValueFrom: fieldRef("metadata.name")},
		{Name: protocol.EnvPodNamespace, ValueFrom: fieldRef("metadata.namespace")},
	}
	spec.Volumes = append(spec.Volumes, tokenVolumeSource())
	addSidecarState(&spec)
	return spec
}

// AttachPolicy is the admission policy turnwatch-attach and its binding.
func AttachPolicy() (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding, error) {
	spec := attachSpec()
	sidecar, err := attachSidecar(spec.InitContainers[0])
	if err != nil {
		return nil, nil, err
	}
	model, err := attachModelPatch()
	if err != nil {
		return nil, nil, err
	}
	nudges, err := attachNudgesPatch()
	if err != nil {
		return nil, nil, err
	}
	var vars []admissionv1.Variable
	for _, v := range attachModelVariables() {
		vars = append(vars, admissionv1.Variable{Name: v[0], Expression: v[1]})
	}
	var vols []string
	for _, v := range spec.Volumes {
		lit, err := celLiteral(v, "Object.spec.volumes")
		if err != nil {
			return nil, nil, err
		}
		vols = append(vols, lit)
	}
	meta := metav1.ObjectMeta{Name: AttachPolicyName, Labels: map[string]string{
		"app.kubernetes.io/name": "turnwatch", "app.kubernetes.io/component": "admission"}}
	jsonPatch := func(expr string) admissionv1.Mutation {
		return admissionv1.Mutation{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: expr}}
	}
	pol := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			ParamKind: &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "not-a-turn-pod",
				Expression: "!('" + twv1.LabelRun + "' in object.metadata.?labels.orValue({}))",
			}},
			Variables:          vars,
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
			// One mutation, its patches applied in order: each mutation of a
			// policy costs the API server a conversion of the whole Pod.
			Mutations: []admissionv1.Mutation{jsonPatch(strings.Join([]string{
				// Each added to the Pod's own list, never a list made of both:
				// the Pod's items and a literal do not marshal together.
				`(has(object.spec.initContainers) ?
  [JSONPatch{op: "add", path: "/spec/initContainers/0", value: ` + sidecar + `}] :
  [JSONPatch{op: "add", path: "/spec/initContainers", value: [` + sidecar + `]}])`,
				resourcesPatch(),
				`(has(object.spec.volumes) ? [
  ` + eachVolume(vols) + `] :
  [JSONPatch{op: "add", path: "/spec/volumes", value: [
  ` + strings.Join(vols, ",\n  ") + `]}])`,
				// The model gateway, where the namespace has one, and the nudges'
				// volume, where its guards deliver them.
				agentLists(),
				model,
				nudges,
				// A Pod that runs as default runs as the attached sidecars'
				// account (the deprecated alias too, which the API server
				// filled).
				`(object.spec.?serviceAccountName.orValue('default') in ['', 'default'] ?
  [JSONPatch{op: "add", path: "/spec/serviceAccountName", value: "` + AttachServiceAccount + `"}] +
  (has(object.spec.serviceAccount) ? [JSONPatch{op: "add", path: "/spec/serviceAccount", value: "` + AttachServiceAccount + `"}] : []) : [])`,
				`(object.spec.?terminationGracePeriodSeconds.orValue(` + strconv.FormatInt(SidecarGraceSeconds, 10) + `) < ` + strconv.FormatInt(SidecarGraceSeconds, 10) +
					` ? [JSONPatch{op: "replace", path: "/spec/terminationGracePeriodSeconds", value: ` + strconv.FormatInt(SidecarGraceSeconds, 10) + `}] : [])`,
			}, " +\n"))},
		},
	}
	bind := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: meta,
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: AttachPolicyName,
			// No namespace: the ConfigMap of the Pod's own namespace. None
			// there (a namespace labelled while the manager was down): the
			// Pod is created as it is, never refused for turnwatch's sake.
			ParamRef: &admissionv1.ParamRef{Name: twv1.AttachParams, ParameterNotFoundAction: ptr.To(admissionv1.AllowAction)},
			MatchResources: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{twv1.LabelAttach: twv1.AttachEnabled}},
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: twv1.LabelWatch, Operator: metav1.LabelSelectorOpExists}}},
			},
		},
	}
	return pol, bind, nil
}

// eachVolume is a JSONPatch that appends each of vols to the Pod's volumes.
func eachVolume(vols []string) string {
	var ops []string
	for _, v := range vols {
		ops = append(ops, `JSONPatch{op: "add", path: "/spec/volumes/-", value: `+v+`}`)
	}
	return strings.Join(ops, ",\n  ")
}

// AttachPolicyName names the policy and its binding.
const AttachPolicyName = "turnwatch-attach"

// AttachServiceAccount is the account an attached Pod that ran as default
// runs as: its token, which the sidecar alone mounts, writes its own Pod's
// status, like a turn's sidecar's, and never a run's progress
// (config/sidecar: turnwatch-sidecar-run-progress), so that a Pod an editor
// names as a turn's cannot report for that turn.
const AttachServiceAccount = "turnwatch-attach"

// attachSidecar is the sidecar container as a CEL literal: its shape from
// c, its image, resources and env from the Pod and the parameters.
func attachSidecar(c corev1.Container) (string, error) {
	byName := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		byName[e.Name] = e
	}
	var env []string
	for _, ne := range attachEnv() {
		name, expr := ne[0], ne[1]
		if expr == "" {
			e, ok := byName[name]
			if !ok {
				return "", fmt.Errorf("attach: the sidecar has no env %s to keep", name)
			}
			lit, err := celLiteral(e, "Object.spec.initContainers.env")
			if err != nil {
				return "", err
			}
			env = append(env, lit)
			continue
		}
		env = append(env, "Object.spec.initContainers.env{name: "+strconv.Quote(name)+", value: "+expr+"}")
	}
	c.Env, c.Image = nil, ""
	lit, err := celLiteral(c, "Object.spec.initContainers", "resources")
	if err != nil {
		return "", err
	}
	extra := []string{
		"image: params.data['" + ParamImage + "']",
		"resources: Object.spec.initContainers.resources{}",
		"env: [\n    " + strings.Join(env, ",\n    ") + "]",
	}
	return strings.TrimSuffix(lit, "}") + ",\n  " + strings.Join(extra, ",\n  ") + "}", nil
}

// resourcesPatch sets the sidecar's resources from the parameters' keys
// "requests.NAME" and "limits.NAME", one by one: a CEL map literal of
// optional entries would say it at once, and crashes the API server's
// check of the policy (cel-go's homogeneous aggregate literal validator,
// Kubernetes 1.37.2).
func resourcesPatch() string {
	var names []string
	for _, r := range attachResources {
		names = append(names, "'"+string(r)+"'")
	}
	list := "[" + strings.Join(names, ", ") + "]"
	var parts []string
	for _, kind := range []string{"requests", "limits"} {
		path := "/spec/initContainers/0/resources/" + kind
		parts = append(parts,
			"("+list+".exists(r, '"+kind+".' + r in params.data) ? [JSONPatch{op: \"add\", path: \""+path+"\", value: {}}] : [])",
			list+".filter(r, '"+kind+".' + r in params.data).map(r, JSONPatch{op: \"add\", path: \""+path+"/\" + r, value: params.data['"+kind+".' + r]})")
	}
	return strings.Join(parts, " +\n")
}

// celLiteral writes v (JSON-marshalled) as a CEL object literal of the
// policy's typed object, whose type at path is typ, but for its fields
// named in drop.
func celLiteral(v any, typ string, drop ...string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", err
	}
	for _, k := range drop {
		delete(doc, k)
	}
	return celValue(doc, typ)
}

func celValue(v any, typ string) (string, error) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var fields []string
		for _, k := range keys {
			s, err := celValue(x[k], typ+"."+k)
			if err != nil {
				return "", err
			}
			fields = append(fields, k+": "+s)
		}
		return typ + "{" + strings.Join(fields, ", ") + "}", nil
	case []any:
		var items []string
		for _, it := range x {
			s, err := celValue(it, typ)
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case string:
		if p, ok := paramSentinels[x]; ok {
			return "params.data['" + p + "']", nil
		}
		return strconv.Quote(x), nil
	case float64:
		if x != float64(int64(x)) {
			return "", fmt.Errorf("attach: %s: %v is not an integer", typ, x)
		}
		return strconv.FormatInt(int64(x), 10), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("attach: %s: cannot write %T", typ, v)
}
