package attach

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The sidecar's verdict is written on its own Pod with a token only the
// sidecar should mount (docs/attach.md#forgeable). A container besides the
// sidecar that mounts a service account token could write the verdict
// itself: the turn says so.

// Forgeable names the first container (init containers first) other than
// the sidecar that mounts a volume holding a service account token, and
// that volume; "" when none does.
func Forgeable(pod *corev1.Pod) string {
	tokens := tokenVolumes(pod.Spec.Volumes)
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.Name == protocol.SidecarContainerName {
				continue
			}
			for _, m := range c.VolumeMounts {
				if tokens[m.Name] {
					return fmt.Sprintf("the container %s mounts the service account token volume %s: its agent could write its own verdict", c.Name, m.Name)
				}
			}
		}
	}
	return ""
}

// tokenVolumes are the Pod's volumes that hold a service account token: a
// projected volume with a serviceAccountToken source (the automounted
// kube-api-access-* is one), and, by their names, the sidecar's own token
// volume and kube-api-access-* whatever their source.
func tokenVolumes(vols []corev1.Volume) map[string]bool {
	out := map[string]bool{}
	for _, v := range vols {
		if v.Name == render.TokenVolume || strings.HasPrefix(v.Name, "kube-api-access-") {
			out[v.Name] = true
			continue
		}
		if p := v.Projected; p != nil {
			for _, s := range p.Sources {
				if s.ServiceAccountToken != nil {
					out[v.Name] = true
				}
			}
		}
	}
	return out
}
