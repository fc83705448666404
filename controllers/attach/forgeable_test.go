package attach

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestForgeable(t *testing.T) {
	projected := func(name string, sources ...corev1.VolumeProjection) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
	}
	token := corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}
	config := corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}
	mounting := func(name string, vols ...string) corev1.Container {
		c := corev1.Container{Name: name}
		for _, v := range vols {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: "/" + v})
		}
		return c
	}
	sidecar := mounting(protocol.SidecarContainerName, render.TokenVolume, "kube-api-access-x1")
	for _, tt := range []struct {
		name       string
		vols       []corev1.Volume
		init, main []corev1.Container
		want       string // the container and volume named; "" for none
	}{
		{"only the sidecar mounts its token", []corev1.Volume{projected(render.TokenVolume, token)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent")}, ""},
		{"the kubelet's automounted token", []corev1.Volume{projected(render.TokenVolume, token), projected("kube-api-access-x1", token)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent", "kube-api-access-x1")}, "agent kube-api-access-x1"},
		{"the sidecar's token volume in the agent", []corev1.Volume{projected(render.TokenVolume, token)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent", render.TokenVolume)}, "agent " + render.TokenVolume},
		{"a projected token of another name", []corev1.Volume{projected("creds", config, token)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent"), mounting("helper", "creds")}, "helper creds"},
		{"an init container's token", []corev1.Volume{projected("creds", token)},
			[]corev1.Container{sidecar, mounting("setup", "creds")}, []corev1.Container{mounting("agent")}, "setup creds"},
		{"a projected volume without a token", []corev1.Volume{projected("cfg", config)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent", "cfg")}, ""},
		{"a token volume no one mounts", []corev1.Volume{projected("kube-api-access-x1", token)},
			[]corev1.Container{sidecar}, []corev1.Container{mounting("agent")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: tt.vols, InitContainers: tt.init, Containers: tt.main}}
			got := Forgeable(pod)
			if tt.want == "" {
				if got != "" {
					t.Errorf("Forgeable = %q, want none", got)
				}
				return
			}
			c, v, _ := strings.Cut(tt.want, " ")
			if !strings.Contains(got, "container "+c+" ") || !strings.Contains(got, "volume "+v) {
				t.Errorf("Forgeable = %q, want it to name the container %s and the volume %s", got, c, v)
			}
		})
	}
}
