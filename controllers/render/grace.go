package render

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

const (
	// SidecarGraceSeconds is the least termination grace of a turn's Pod:
	// after SIGTERM the sidecar keeps reading the agent's output for
	// protocol.SidecarDrain (10 s), then has protocol.SidecarWriteGrace
	// (10 s) for its last writes; 5 s more for the kubelet and the API server.
	SidecarGraceSeconds = int64((protocol.SidecarDrain + protocol.SidecarWriteGrace + 5*time.Second) / time.Second)
)

// raiseGrace makes the Pod's termination grace cover the sidecar's drain
// and report: a shorter one would cut the sidecar off before the end of the
// agent's output. Unset means the API's default (30 s), which is enough.
func raiseGrace(spec *corev1.PodSpec) {
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < SidecarGraceSeconds {
		v := SidecarGraceSeconds
		spec.TerminationGracePeriodSeconds = &v
	}
}
