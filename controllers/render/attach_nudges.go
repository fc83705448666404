package render

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// An attached Pod's nudges (docs/attach.md#nudges): where the namespace's
// guards deliver nudges to the agent (nudgeDelivery: file), turnwatch-attach
// shares the nudges volume between the sidecar and the agent container as
// addNudges does for a run's turn, and the patches are written from
// addNudges's own result. The namespace's guards decide, not the Pod's
// guards annotation: the policy reads no JSON.

// Keys of the ConfigMap turnwatch-attach for the nudges.
const (
	// ParamNudgeDelivery is "file" where the namespace's guards deliver
	// nudges to the agent.
	ParamNudgeDelivery = "nudgeDelivery"
	// ParamRefuseWait is how long the agent's pre-tool hook waits for the
	// sidecar's verdict; unset where nothing is refused.
	ParamRefuseWait = "refuseWait"
)

// nudgesSpec is what addNudges does, with guards g, to a Pod spec of an
// empty sidecar and an empty agent container.
func nudgesSpec(g twv1.Guards) corev1.PodSpec {
	spec := corev1.PodSpec{InitContainers: []corev1.Container{{}}, Containers: []corev1.Container{{}}}
	addNudges(&spec, 0, g)
	return spec
}

// nudgeParams sets the nudges' keys of the ConfigMap from the namespace's
// guards (a JSON object; one that does not read delivers none).
func nudgeParams(guards []byte, d map[string]string) {
	var g twv1.Guards
	if json.Unmarshal(guards, &g) != nil {
		return
	}
	spec := nudgesSpec(g)
	if len(spec.Volumes) == 0 {
		return
	}
	d[ParamNudgeDelivery] = monitor.NudgeDeliveryFile
	for _, e := range spec.Containers[0].Env {
		if e.Name == nudgefile.EnvRefuseWait {
			d[ParamRefuseWait] = e.Value
		}
	}
}

// attachNudgesPatch is the JSONPatch that shares the nudges volume, after
// the sidecar was added (first, the volumes list present) and the agent
// container's lists (agentLists).
func attachNudgesPatch() (string, error) {
	spec := nudgesSpec(twv1.Guards{NudgeDelivery: ptr.To(monitor.NudgeDeliveryFile), Refuse: ptr.To(true),
		RefuseWait: ptr.To(sentinel(ParamRefuseWait))})
	if len(spec.Volumes) != 1 {
		return "", fmt.Errorf("attach: the nudges add %d volumes, want 1", len(spec.Volumes))
	}
	var ops, cond []string
	add := func(path, typ string, v any) error {
		lit, err := celLiteral(v, typ)
		ops = append(ops, `JSONPatch{op: "add", path: `+path+`, value: `+lit+`}`)
		return err
	}
	s, a := spec.InitContainers[0], spec.Containers[0]
	if err := add(`"/spec/volumes/-"`, "Object.spec.volumes", spec.Volumes[0]); err != nil {
		return "", err
	}
	for _, m := range s.VolumeMounts {
		if err := add(`"/spec/initContainers/0/volumeMounts/-"`, "Object.spec.initContainers.volumeMounts", m); err != nil {
			return "", err
		}
	}
	for _, e := range s.Env {
		if err := add(`"/spec/initContainers/0/env/-"`, "Object.spec.initContainers.env", e); err != nil {
			return "", err
		}
	}
	if err := add(`"/spec/initContainers/0/startupProbe"`, "Object.spec.initContainers.startupProbe", s.StartupProbe); err != nil {
		return "", err
	}
	for _, m := range a.VolumeMounts {
		if err := add(`variables.agentPath + "/volumeMounts/-"`, "Object.spec.containers.volumeMounts", m); err != nil {
			return "", err
		}
	}
	for _, e := range a.Env {
		lit, err := celLiteral(e, "Object.spec.containers.env")
		if err != nil {
			return "", err
		}
		op := `JSONPatch{op: "add", path: variables.agentPath + "/env/-", value: ` + lit + `}`
		if p, ok := paramSentinels[e.Value]; ok {
			// Unset where nothing is refused.
			cond = append(cond, `('`+p+`' in params.data ? [`+op+`] : [])`)
			continue
		}
		ops = append(ops, op)
	}
	return "(variables.nudges ? [\n  " + strings.Join(ops, ",\n  ") + "] + " + strings.Join(cond, " + ") + " : [])", nil
}

// agentLists adds the agent container's env and mounts lists where the
// gateway or the nudges append to them and the container has none.
func agentLists() string {
	c := "object.spec.containers[variables.agent]"
	return `(variables.agent >= 0 && (variables.model || variables.nudges) && !has(` + c + `.env) ? [JSONPatch{op: "add", path: variables.agentPath + "/env", value: []}] : []) +
(variables.nudges && !has(` + c + `.volumeMounts) ? [JSONPatch{op: "add", path: variables.agentPath + "/volumeMounts", value: []}] : [])`
}
