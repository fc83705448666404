package agentturn

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The sidecar's reports the turn keeps beside its outcome: the call the
// hook refused, whether the nudge reached the agent, what a drill's
// scripted model served, the audited detectors' would-trips, and the
// stream's own cost beside the gateway's metered one. A settled turn's Pod
// may go (a succeeded one is not kept), so the turn holds them.

// SetTurnReports copies the verdict's reports onto the turn's status.
func SetTurnReports(st *twv1.AgentTurnStatus, v Verdict) {
	if v.RefusedCall != "" {
		st.RefusedCall = v.RefusedCall
	}
	if delivered, known := protocol.NudgeDelivery(v.Nudge); known {
		st.NudgeDelivery = twv1.NudgeNotDelivered
		if delivered {
			st.NudgeDelivery = twv1.NudgeDelivered
		}
	}
	if d := v.drill; d != nil {
		st.Drill = &twv1.TurnDrill{Requests: int32(d.Requests), SideRequests: int32(d.SideRequests), Fresh: d.Fresh}
	}
	setWouldTrips(st, v.WouldTrips)
	if v.streamCost > 0 {
		st.StreamCostUSD = v.streamCost.String()
	}
}

// lateReports records what the sidecar reported after the turn settled:
// the hook refuses the tripping call, and the sidecar tells it, after the
// trip that settled the turn (within its drain, docs/protocol.md); the
// last would-trip counts come with the sidecar's last write.
func (r *AgentTurnReconciler) lateReports(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod) error {
	st := turn.Status.DeepCopy()
	rep := readPod(pod)
	SetTurnReports(st, Verdict{drill: rep.Drill, RefusedCall: rep.RefusedCall, Nudge: rep.Nudge, WouldTrips: rep.WouldTrips, streamCost: streamCostOf(rep)})
	before := WouldTripDetectors(&turn.Status)
	if err := r.writeStatus(ctx, turn, st); err != nil {
		return err
	}
	RecordWouldTrips(r.Recorder, run, turn, before)
	return nil
}
