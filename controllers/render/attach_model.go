package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// An attached Pod's model gateway (docs/attach.md#the-model-gateway):
// where its namespace's policies give a gateway (spec.model.gateway),
// turnwatch-attach points the agent at the sidecar as addModel does for a
// run's turn, and the patches are written from addModel's own result.
// What a policy cannot make per Pod comes from the namespace: the port
// (AttachModelPort, one for every attached Pod) and the placeholder key
// (the ConfigMap's modelToken, one per namespace, made by the manager).
// A Pod in its own network namespace has a loopback of its own; a
// host-network Pod's sidecar declares the port as a host port, so that
// the scheduler puts no two of them on one node. The format must be named
// (auto names no endpoint to point), and the agent container must exist.

// Keys of the ConfigMap turnwatch-attach for the model gateway.
const (
	ParamModelUpstream  = "modelUpstream"
	ParamModelKeySecret = "modelKeySecret"
	ParamModelKeyKey    = "modelKeySecretKey"
	ParamModelToken     = "modelToken"
	// ParamModelRequired names the policy that requires the gateway
	// (spec.model.requireGateway): turnwatch-attach-gateway then refuses an
	// attached Pod the gateway cannot serve.
	ParamModelRequired = "modelRequired"
)

// AttachModelPort is the loopback port of every attached Pod's gateway:
// above the run turns' range (agentturn's model ports, 20000-20999), which
// the manager hands out to its own Pods, and below the NodePort range.
const AttachModelPort int32 = 21000

// AttachGateway is a namespace's model gateway for its attached Pods.
type AttachGateway struct {
	// Gateway is its policies' (turnpolicy.Gateway); nil for none.
	Gateway *twv1.ModelGateway
	// Required names the policy requiring it; "" when none does.
	Required string
	// Token is the namespace's placeholder key (ModelToken).
	Token string
}

// params are g's keys of the ConfigMap.
func (g AttachGateway) params(d map[string]string) {
	if g.Required != "" {
		d[ParamModelRequired] = g.Required
	}
	if g.Gateway == nil {
		return
	}
	d[ParamModelUpstream], d[ParamModelToken] = g.Gateway.Upstream, g.Token
	d[ParamModelKeySecret], d[ParamModelKeyKey] = g.Gateway.KeySecretRef.Name, g.Gateway.KeySecretRef.Key
}

// paramSentinels stand, in the Pod addModel wires (attachWiring), for the
// values the policy reads from its parameters: celValue writes each as its
// parameter.
var paramSentinels = map[string]string{
	"\x00upstream": ParamModelUpstream,
	"\x00secret":   ParamModelKeySecret,
	"\x00key":      ParamModelKeyKey,
	"\x00token":    ParamModelToken,
	"\x00wait":     ParamRefuseWait,
}

func sentinel(param string) string {
	for s, p := range paramSentinels {
		if p == param {
			return s
		}
	}
	panic("no sentinel for " + param)
}

// attachWiring is what addModel does to a Pod of format's whose sidecar is
// empty: the agent's env it sets (the endpoint and the CLI's first key),
// and the sidecar's env, mounts and probe, and the key's volume.
type attachWiring struct {
	cli     agents.CLI
	agent   []corev1.EnvVar
	sidecar corev1.Container
	volume  corev1.Volume
}

func wiringFor(format string) (attachWiring, error) {
	cli, _ := agents.Lookup(format)
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{}
	// The agent's command reads the endpoint, as a template that writes the
	// CLI's config from it does (Endpoint.Config).
	pod.Spec.Containers = []corev1.Container{{Name: "agent", Command: []string{"$" + cli.Endpoint.Env}}}
	pod.Spec.InitContainers = []corev1.Container{{}}
	run := &twv1.AgentRun{Spec: twv1.AgentRunSpec{Format: twv1.Format(format)}}
	gw := &twv1.ModelGateway{Upstream: sentinel(ParamModelUpstream),
		KeySecretRef: twv1.SecretKeyRef{Name: sentinel(ParamModelKeySecret), Key: sentinel(ParamModelKeyKey)}}
	o := RenderOptions{ModelPort: AttachModelPort, ModelToken: sentinel(ParamModelToken)}
	if err := addModel(pod, 0, 0, run, modelSeat{gateway: gw}, o); err != nil {
		return attachWiring{}, fmt.Errorf("attach: %s: %w", format, err)
	}
	if len(pod.Spec.Volumes) != 1 {
		return attachWiring{}, fmt.Errorf("attach: %s: the model adds %d volumes, want 1", format, len(pod.Spec.Volumes))
	}
	return attachWiring{cli: cli, agent: pod.Spec.Containers[0].Env, sidecar: pod.Spec.InitContainers[0], volume: pod.Spec.Volumes[0]}, nil
}

// attachModelVariables are the policy's variables the model's and the
// nudges' patches read: the format, the agent container's index (-1 when
// the label names none), whether the gateway serves the Pod, and whether
// nudges are delivered to its agent.
func attachModelVariables() [][2]string {
	var formats []string
	for _, f := range agents.Formats() {
		formats = append(formats, strconv.Quote(f))
	}
	label := "object.metadata.?labels[?'" + twv1.LabelAgentContainer + "']"
	return [][2]string{
		{"format", "object.metadata.labels['" + twv1.LabelWatch + "']"},
		{"agent", label + ".hasValue() ? object.spec.containers.map(c, c.name).indexOf(" + label + ".value()) : 0"},
		{"model", "params.data[?'" + ParamModelUpstream + "'].orValue('') != '' && variables.format in [" + strings.Join(formats, ", ") + "] && variables.agent >= 0"},
		{"nudges", "params.data[?'" + ParamNudgeDelivery + "'].orValue('') != '' && variables.agent >= 0"},
		{"agentPath", "'/spec/containers/' + string(variables.agent)"},
		{"agentEnv", "variables.agent >= 0 ? object.spec.containers[variables.agent].?env.orValue([]).map(e, e.name) : []"},
	}
}

// attachModelPatch is the JSONPatch that wires the gateway into a Pod the
// sidecar was added to (the sidecar first, the volumes list present).
func attachModelPatch() (string, error) {
	var formats []string
	var sidecar []string
	for _, f := range agents.Formats() {
		w, err := wiringFor(f)
		if err != nil {
			return "", err
		}
		if sidecar == nil {
			if sidecar, err = sidecarModelPatch(w); err != nil {
				return "", err
			}
		}
		agent, err := agentModelPatch(w)
		if err != nil {
			return "", err
		}
		formats = append(formats, "(variables.format == "+strconv.Quote(f)+" ? "+agent+" : [])")
	}
	port := strconv.Itoa(int(AttachModelPort))
	hostPort := `(object.spec.?hostNetwork.orValue(false) ? [JSONPatch{op: "add", path: "/spec/initContainers/0/ports", value: [Object.spec.initContainers.ports{name: "turnwatch-model", containerPort: ` + port + `, hostPort: ` + port + `, protocol: "TCP"}]}] : [])`
	return "(variables.model ? [\n  " + strings.Join(sidecar, ",\n  ") + "] +\n  " + hostPort + " +\n  " +
		strings.Join(formats, " +\n  ") + " : [])", nil
}

// sidecarModelPatch appends to the sidecar what addModel gave it, the
// key's volume, and the port's label.
func sidecarModelPatch(w attachWiring) ([]string, error) {
	var ops []string
	add := func(path, typ string, v any) error {
		lit, err := celLiteral(v, typ)
		ops = append(ops, `JSONPatch{op: "add", path: "`+path+`", value: `+lit+`}`)
		return err
	}
	for _, e := range w.sidecar.Env {
		if err := add("/spec/initContainers/0/env/-", "Object.spec.initContainers.env", e); err != nil {
			return nil, err
		}
	}
	for _, m := range w.sidecar.VolumeMounts {
		if err := add("/spec/initContainers/0/volumeMounts/-", "Object.spec.initContainers.volumeMounts", m); err != nil {
			return nil, err
		}
	}
	if err := add("/spec/initContainers/0/startupProbe", "Object.spec.initContainers.startupProbe", w.sidecar.StartupProbe); err != nil {
		return nil, err
	}
	if err := add("/spec/volumes/-", "Object.spec.volumes", w.volume); err != nil {
		return nil, err
	}
	ops = append(ops, `JSONPatch{op: "add", path: "/metadata/labels/`+strings.ReplaceAll(twv1.LabelModelPort, "/", "~1")+`", value: "`+strconv.Itoa(int(AttachModelPort))+`"}`)
	// Where the model is served, a refused request is held until the Pod's
	// stop ends the agent (gateway.Refusal.Hold).
	ops = append(ops, `JSONPatch{op: "add", path: "/spec/initContainers/0/env/-", value: Object.spec.initContainers.env{name: "`+protocol.EnvModelHold+`", value: "true"}}`)
	return ops, nil
}

// agentModelPatch sets the agent's env as addModel does (setEnv, setKeys):
// each name it set replaces every entry of that name the container has, or
// is appended; the placeholder replaces each key the container sets, or is
// the CLI's first key. The container's env list is there (agentLists).
func agentModelPatch(w attachWiring) (string, error) {
	var parts []string
	keys := w.cli.Endpoint.Keys
	for _, e := range w.agent {
		lit, err := celLiteral(e, "Object.spec.containers.env")
		if err != nil {
			return "", err
		}
		if slices.Contains(keys, e.Name) {
			continue // the first key: below
		}
		parts = append(parts, setEnvPatch(e.Name, lit, true))
	}
	var token string
	for _, e := range w.agent {
		if slices.Contains(keys, e.Name) {
			token = e.Value
		}
	}
	var quoted []string
	for _, k := range keys {
		lit, err := celLiteral(corev1.EnvVar{Name: k, Value: token}, "Object.spec.containers.env")
		if err != nil {
			return "", err
		}
		parts = append(parts, setEnvPatch(k, lit, false))
		quoted = append(quoted, strconv.Quote(k))
	}
	first, err := celLiteral(corev1.EnvVar{Name: keys[0], Value: token}, "Object.spec.containers.env")
	if err != nil {
		return "", err
	}
	parts = append(parts, `(variables.agentEnv.exists(n, n in [`+strings.Join(quoted, ", ")+`]) ? [] : [JSONPatch{op: "add", path: variables.agentPath + "/env/-", value: `+first+`}])`)
	return "(" + strings.Join(parts, " +\n    ") + ")", nil
}

// setEnvPatch replaces the first and the last entry named name (the last
// is the one the kubelet keeps) with lit; with add, one is appended when
// none is there.
func setEnvPatch(name, lit string, add bool) string {
	q := strconv.Quote(name)
	orElse := "[]"
	if add {
		orElse = `[JSONPatch{op: "add", path: variables.agentPath + "/env/-", value: ` + lit + `}]`
	}
	return `(variables.agentEnv.indexOf(` + q + `) < 0 ? ` + orElse + ` :
    [variables.agentEnv.indexOf(` + q + `), variables.agentEnv.lastIndexOf(` + q + `)].map(i, JSONPatch{op: "replace", path: variables.agentPath + "/env/" + string(i), value: ` + lit + `}))`
}
