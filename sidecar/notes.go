package sidecar

import (
	"context"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// tellNotes reports, once each, the engine's notes on the stream: on its
// cost (CostMismatch), with the next write, and on its format
// (FormatMismatch) at once: the detectors cannot see a stream they do not
// read, and the agent runs on.
func (r *runner) tellNotes(ctx context.Context, eng *monitor.Engine) error {
	if note := eng.CostMismatch(); note != "" && !r.costTold {
		r.costTold = true
		r.log.Info("a cost report was not taken as it stood", "note", note)
		r.rep.warn(protocol.ConditionCostMismatch, protocol.ReasonCostMismatch, note)
	}
	if note := eng.FormatMismatch(); note != "" && !r.formatTold {
		r.formatTold = true
		r.log.Info("the stream does not read as its format", "format", r.cfg.Format, "note", note)
		r.rep.warn(protocol.ConditionFormatMismatch, protocol.ReasonFormatMismatch, note)
		return r.rep.ensure(ctx)
	}
	return nil
}
