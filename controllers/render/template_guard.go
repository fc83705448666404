package render

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// TemplateHazards lists, each with its field path, what in a run's Pod
// template would let a container reach the sidecar's credential or forge
// its reports. The AgentRun admission policy
// (config/sidecar/validatingadmissionpolicy.yaml) refuses the same at apply time; this
// check is the controller's own, for a cluster where that policy is not
// installed: the controller never renders such a Pod.
func TemplateHazards(spec *corev1.PodSpec) []string {
	const base = "spec.template.spec"
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if ptrTrue(spec.ShareProcessNamespace) {
		add("%s.shareProcessNamespace: a shared process namespace exposes the sidecar's files through /proc", base)
	}
	if spec.HostPID {
		add("%s.hostPID: the node's process namespace exposes the sidecar's files through /proc", base)
	}
	if spec.HostIPC {
		add("%s.hostIPC: the node's IPC namespace is shared with every Pod of the node", base)
	}
	if sc := spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == protocol.SidecarUID {
		add("%s.securityContext.runAsUser: %d is reserved for the turnwatch sidecar", base, protocol.SidecarUID)
	}
	for _, v := range spec.Volumes {
		out = append(out, volumeHazards(base, v)...)
	}
	for _, list := range []struct {
		field string
		cs    []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for _, c := range list.cs {
			out = append(out, containerHazards(fmt.Sprintf("%s.%s[%s]", base, list.field, c.Name), c.VolumeMounts, c.SecurityContext)...)
		}
	}
	for _, c := range spec.EphemeralContainers {
		out = append(out, containerHazards(fmt.Sprintf("%s.ephemeralContainers[%s]", base, c.Name), c.VolumeMounts, c.SecurityContext)...)
	}
	return out
}

func volumeHazards(base string, v corev1.Volume) []string {
	var out []string
	path := fmt.Sprintf("%s.volumes[%s]", base, v.Name)
	if strings.HasPrefix(v.Name, protocol.ReservedPrefix) {
		out = append(out, fmt.Sprintf("%s.name: the prefix %q is reserved for the sidecar's volumes", path, protocol.ReservedPrefix))
	}
	if v.HostPath != nil {
		out = append(out, fmt.Sprintf("%s.hostPath: the node's filesystem holds every Pod's credentials", path))
	}
	if p := v.Projected; p != nil {
		for _, s := range p.Sources {
			if s.ServiceAccountToken != nil {
				out = append(out, fmt.Sprintf("%s.projected.sources.serviceAccountToken: a token bound to the turn's Pod is the sidecar's alone", path))
			}
		}
	}
	return out
}

func containerHazards(path string, mounts []corev1.VolumeMount, sc *corev1.SecurityContext) []string {
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.Name, protocol.ReservedPrefix) {
			out = append(out, fmt.Sprintf("%s.volumeMounts[%s].name: the prefix %q is reserved for the sidecar's volumes", path, m.Name, protocol.ReservedPrefix))
		}
	}
	if sc == nil {
		return out
	}
	if sc.RunAsUser != nil && *sc.RunAsUser == protocol.SidecarUID {
		out = append(out, fmt.Sprintf("%s.securityContext.runAsUser: %d is reserved for the turnwatch sidecar", path, protocol.SidecarUID))
	}
	if ptrTrue(sc.Privileged) {
		out = append(out, fmt.Sprintf("%s.securityContext.privileged: a privileged container reaches the node and every Pod on it", path))
	}
	return out
}

func ptrTrue(b *bool) bool { return b != nil && *b }
