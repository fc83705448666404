package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Every path from a template container to the sidecar's credential is
// refused, with the field named; a plain restricted template is not.
func TestTemplateHazards(t *testing.T) {
	agent := func() corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "a"}}}
	}
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   string // "" for none
	}{
		{"plain", func(*corev1.PodSpec) {}, ""},
		{"own volume", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		}, ""},
		{"other uid", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532)}
		}, ""},
		{"mount the token", func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: TokenVolume, MountPath: "/t"}}
		}, "spec.template.spec.containers[agent].volumeMounts[turnwatch-sidecar-token].name"},
		{"reserved volume", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "turnwatch-x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "spec.template.spec.volumes[turnwatch-x].name"},
		{"share process namespace", func(s *corev1.PodSpec) { s.ShareProcessNamespace = ptr.To(true) }, "spec.template.spec.shareProcessNamespace"},
		{"host pid", func(s *corev1.PodSpec) { s.HostPID = true }, "spec.template.spec.hostPID"},
		{"host ipc", func(s *corev1.PodSpec) { s.HostIPC = true }, "spec.template.spec.hostIPC"},
		{"pod uid", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}
		}, "spec.template.spec.securityContext.runAsUser"},
		{"container uid", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}
		}, "spec.template.spec.containers[agent].securityContext.runAsUser"},
		{"init container uid", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "clone", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}}}
		}, "spec.template.spec.initContainers[clone].securityContext.runAsUser"},
		{"ephemeral container uid", func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(protocol.SidecarUID)}}}}
		}, "spec.template.spec.ephemeralContainers[debug].securityContext.runAsUser"},
		{"privileged", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, "spec.template.spec.containers[agent].securityContext.privileged"},
		{"host path", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "kubelet", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet"}}}}
		}, "spec.template.spec.volumes[kubelet].hostPath"},
		{"own token", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, "spec.template.spec.volumes[tok].projected.sources.serviceAccountToken"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := agent()
			c.mutate(&spec)
			got := TemplateHazards(&spec)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("refused: %v", got)
			case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want+":")):
				t.Errorf("got %q, want one hazard at %s", got, c.want)
			}
		})
	}
}

// The controller renders no Pod from a hazardous template, and says why.
func TestRenderRefusesHazards(t *testing.T) {
	run := newRun("ns", "r", func(r *twv1.AgentRun) { r.Spec.Template.Spec.HostPID = true })
	turn := &twv1.AgentTurn{}
	turn.Name, turn.Namespace = "r-0", "ns"
	_, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img"})
	if err == nil || !strings.Contains(err.Error(), "spec.template.spec.hostPID") {
		t.Errorf("err %v", err)
	}
}
