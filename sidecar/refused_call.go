package sidecar

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/quote"
)

// maxCallID bounds the call id told in ConditionCallRefused: the ack file
// is the agent's to write.
const maxCallID = 256

// afterVerdict waits for SIGTERM once the turn's verdict is on the Pod. A
// drill, and a tripped turn whose hook refuses calls, have more to tell
// until the sidecar ends, through the drain after SIGTERM: the call the
// hook refused (written shortly after the trip), and the drill's report.
func (r *runner) afterVerdict(sigCtx, writeCtx context.Context) {
	if !r.isDrill() && !r.watchesRefusals() {
		<-sigCtx.Done()
		return
	}
	r.lateReports(writeCtx)
	ticker := time.NewTicker(r.tick)
	defer ticker.Stop()
	sig, drained := sigCtx.Done(), (<-chan time.Time)(nil)
	for {
		select {
		case <-ticker.C:
			r.lateReports(writeCtx)
			r.rep.drillServed(writeCtx)
		case <-sig:
			if !r.isDrill() && !r.watchesRefusals() {
				return // the refusal is told: nothing more to wait for
			}
			sig, drained = nil, time.After(r.cfg.Drain)
		case <-drained:
			r.lateReports(writeCtx)
			if err := r.rep.drillFinal(writeCtx); err != nil {
				r.log.Info("writing the drill's last report failed", "err", err.Error())
			}
			return
		}
	}
}

// watchesRefusals says whether a refused call may still show up: the turn
// tripped, and the agent's pre-tool hook refuses tripping calls.
func (r *runner) watchesRefusals() bool {
	if !r.cfg.Guards.Refuses() || r.cfg.NudgeDir == "" || r.refusalTold {
		return false
	}
	c, ok := r.rep.present[protocol.ConditionTripped]
	return ok && c.Status == corev1.ConditionTrue
}

// lateReports writes ConditionCallRefused once the hook's ack file names a
// call it refused.
func (r *runner) lateReports(ctx context.Context) {
	if !r.watchesRefusals() {
		return
	}
	acks, err := nudgefile.ReadAcks(r.cfg.NudgeDir)
	if err != nil {
		r.log.Info("cannot read the hook's acknowledgements", "err", err.Error())
	}
	if len(acks.Refused) == 0 {
		return
	}
	r.refusalTold = true
	id := callIDText(acks.Refused[0])
	r.log.Info("the agent's hook refused a call", "call", id)
	if err := r.rep.ensure(ctx, protocol.RefusedCondition(id)); err != nil {
		r.log.Info("writing the refused call failed", "err", err.Error())
	}
}

// callIDText is an id from the agent's file as a condition may carry it:
// valid UTF-8, bounded, escaped (quote.Text).
func callIDText(id string) string {
	id = strings.ToValidUTF8(id, "?")
	if len(id) > maxCallID {
		id = strings.ToValidUTF8(id[:maxCallID], "")
	}
	return quote.Text(id)
}
