package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// nudgesSizeLimit bounds the nudges volume: the hook binary (a few MiB)
// and a file of short JSON lines. An agent that fills it gets its own Pod
// evicted; nothing else shares it.
var nudgesSizeLimit = resource.MustParse("16Mi")

// addNudges shares a volume between the sidecar (the Pod's first init
// container) and the agent container when the run's guards deliver nudges
// to the agent (docs/nudges.md#the-shared-volume). It is an emptyDir
// of its own, with the reserved prefix so no template can name or mount it,
// and it holds only what the sidecar writes for the agent (nudges.jsonl and
// turnwatch-hook): the token stays in its projected volume, mounted in the
// sidecar alone. Both see it at the same path, and both are told it.
func addNudges(spec *corev1.PodSpec, agent int, g twv1.Guards) {
	if g.NudgeDelivery == nil || *g.NudgeDelivery != monitor.NudgeDeliveryFile {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: nudgefile.Volume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &nudgesSizeLimit}}})
	mount := corev1.VolumeMount{Name: nudgefile.Volume, MountPath: nudgefile.Dir}
	env := corev1.EnvVar{Name: nudgefile.EnvDir, Value: nudgefile.Dir}
	for _, c := range []*corev1.Container{&spec.InitContainers[0], &spec.Containers[agent]} {
		c.VolumeMounts = append(c.VolumeMounts, mount)
		c.Env = append(c.Env, env)
	}
	spec.InitContainers[0].StartupProbe = sidecarProbe.DeepCopy()
	if g.Refuse == nil || *g.Refuse {
		wait := "2s"
		if g.RefuseWait != nil {
			wait = *g.RefuseWait
		}
		// The pre-tool hook waits this long for the sidecar's verdict; unset,
		// it does not wait (nothing is refused).
		spec.Containers[agent].Env = append(spec.Containers[agent].Env, corev1.EnvVar{Name: nudgefile.EnvRefuseWait, Value: wait})
	}
}
