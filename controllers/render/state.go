package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

const (
	// StateVolume holds the sidecar's checkpoint (engine state and log
	// position), so that a restarted sidecar resumes where it stood even
	// after the kubelet rotated the agent's log. Only the sidecar mounts it.
	StateVolume    = "turnwatch-sidecar-state"
	stateMountPath = "/var/run/turnwatch/state"
)

// stateSizeLimit bounds the state volume: the checkpoint is one file of at
// most a few hundred KiB (docs/protocol.md), written by rename.
var stateSizeLimit = resource.MustParse("4Mi")

// addSidecarState gives the sidecar (the Pod's first init container, as
// RenderPod puts it) its own state volume and tells it where it is.
func addSidecarState(spec *corev1.PodSpec) {
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: StateVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &stateSizeLimit}}})
	sc := &spec.InitContainers[0]
	sc.VolumeMounts = append(sc.VolumeMounts, corev1.VolumeMount{Name: StateVolume, MountPath: stateMountPath})
	sc.Env = append(sc.Env, corev1.EnvVar{Name: protocol.EnvStateDir, Value: stateMountPath})
}
