package render

import (
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The turn's audited detectors reach the sidecar as TURNWATCH_AUDIT, in a
// form the sidecar reads back; a turn that audits none has no such env.
func TestRenderAudit(t *testing.T) {
	tests := []struct {
		name  string
		audit []twv1.AuditedDetector
		want  string // "" for no env
	}{
		{"none", nil, ""},
		{"two", []twv1.AuditedDetector{{Detector: "identicalCalls", Source: "TurnPolicy/a"}, {Detector: "stall", Source: "ClusterTurnPolicy/b"}},
			"identicalCalls,stall"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun("ns", "r")
			turn := &twv1.AgentTurn{}
			turn.Name, turn.Namespace = "r-1", "ns"
			turn.Spec = twv1.AgentTurnSpec{RunName: "r", Attempt: 1, Audit: tt.audit}
			pod, err := RenderPod(run, turn, RenderOptions{SidecarImage: "img", Guards: shared.DefaultConfig().Guards})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := envOf(pod.Spec.InitContainers[0])[protocol.EnvAudit]
			if ok != (tt.want != "") || got != tt.want {
				t.Fatalf("%s = %q (set %v), want %q", protocol.EnvAudit, got, ok, tt.want)
			}
			if err := monitor.ValidateAudit(protocol.ParseAudit(got)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
