package render

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// auditEnv tells the sidecar the detectors the turn audits
// (docs/policies.md#audit): their trips are would-trips and the turn goes
// on. A turn that audits none gets no env, so its Pod is what it was
// before audit existed.
func auditEnv(turn *twv1.AgentTurn) []corev1.EnvVar {
	if len(turn.Spec.Audit) == 0 {
		return nil
	}
	names := make([]string, len(turn.Spec.Audit))
	for i, a := range turn.Spec.Audit {
		names[i] = a.Detector
	}
	return []corev1.EnvVar{{Name: protocol.EnvAudit, Value: strings.Join(names, ",")}}
}
