package sidecar

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// hookName is turnwatch-hook's file name, next to the sidecar's binary in
// the image.
const hookName = "turnwatch-hook"

// delivers says whether nudges reach the agent through the shared volume.
func (c Options) delivers() bool { return c.NudgeDir != "" && c.Guards.Delivers() }

// installHook copies turnwatch-hook into the shared volume, for the agent
// CLI's hook to run. A failure is logged, not fatal: the nudges file is
// still written, and the watchdog's own job does not depend on it.
//
// Then, with any nudges volume, it writes nudgefile.ReadyFile there: the
// startupProbe (turnwatch-sidecar probe) waits for it, so the agent starts
// with its hook files in place.
func (r *runner) installHook() {
	if r.cfg.NudgeDir == "" {
		return
	}
	defer r.ready()
	if !r.cfg.delivers() {
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = nudgefile.InstallHook(r.cfg.NudgeDir, filepath.Join(filepath.Dir(exe), hookName))
	}
	if err != nil {
		r.log.Error(err, "cannot put turnwatch-hook in the nudges volume", "dir", r.cfg.NudgeDir)
		return
	}
	r.log.Info("turnwatch-hook installed", "path", filepath.Join(r.cfg.NudgeDir, nudgefile.HookPath))
}

// ready writes the ready marker; a failure is logged (the probe then
// keeps the agent from starting, and the Pod's events tell why).
func (r *runner) ready() {
	if err := nudgefile.WriteReady(r.cfg.NudgeDir); err != nil {
		r.log.Error(err, "cannot write the ready marker in the nudges volume", "dir", r.cfg.NudgeDir)
	}
}

// nudges delivers what one line (or the end) said: to the agent first, in
// the nudges file, then to the humans through the Pod condition, whose
// text says whether the agent was told. Nudges are numbered in the turn's
// order, from the engine's count, so a replay after a restart writes the
// same numbers and the hook shows each once. A nudge written for the agent
// is told to the humans once its delivery is known (settleDeliveries).
func (r *runner) nudges(ctx context.Context, eng *monitor.Engine, ns []monitor.Nudge) error {
	first := eng.NudgeCount() - len(ns) + 1
	for i, n := range ns {
		p := pendingNudge{n: n, seq: first + i, warning: n.Detector != monitor.DetectorSilentRun, written: r.clock.Now()}
		if !r.cfg.delivers() {
			r.logNudge(p, "")
			if err := r.rep.silent(ctx, n.Detector, conditionText(n, p.warning, "")); err != nil {
				return err
			}
			continue
		}
		rec := nudgefile.Record{Seq: p.seq, Time: p.written, Detector: n.Detector, Message: n.Message, Line: n.Line, Warning: p.warning}
		if err := nudgefile.Append(r.cfg.NudgeDir, rec); err != nil {
			r.log.Error(err, "cannot deliver a nudge to the agent", "seq", rec.Seq)
			p.unwritten = true
		}
		r.pending = append(r.pending, p)
	}
	r.countCalls(eng)
	// Per line, the ack file is read only when a call began since the last
	// look: that is when a pending nudge's delivery can become known (the
	// tick looks too, once per period).
	if steps := eng.State().Steps; len(ns) == 0 && steps == r.lookedAt {
		return nil
	}
	return r.settleDeliveries(ctx, eng, false)
}

// deliverySlack is how many tool calls must begin after a nudge was
// written, as the log's timestamps of their lines tell, before its
// delivery is known to have failed: the first such call's hook may have
// run before its line was printed (a Codex CLI's), the second's ran after
// the first's line, so after the nudge. Counting calls as the sidecar
// reads them instead misjudged a real Codex CLI on the local node, which
// makes a call every 50 ms, faster than the sidecar reads its lines
// (docs/nudges.md#delivery-confirmed).
const deliverySlack = 2

// pendingNudge is a nudge written for the agent whose Pod condition waits
// for its delivery to be known: the hook acknowledged it (delivered), or
// deliverySlack calls began after it without that (not delivered), or the
// turn ended.
type pendingNudge struct {
	n       monitor.Nudge
	seq     int
	warning bool
	written time.Time // when it was written to the nudges file
	// after is how many calls began whose lines the log wrote after it.
	after     int
	unwritten bool // the nudges file could not be written
}

// countCalls counts, for each pending nudge, the calls begun since the
// last count if the line that brought them was written after the nudge.
func (r *runner) countCalls(eng *monitor.Engine) {
	steps := eng.State().Steps
	for i := range r.pending {
		if r.lineTime.After(r.pending[i].written) {
			r.pending[i].after += steps - r.stepsSeen
		}
	}
	r.stepsSeen = steps
}

// Delivery words on the nudge's Pod condition and Event; the controller
// reads them back (protocol.NudgeDelivery).
const (
	wordDelivered    = protocol.WordDelivered
	wordNotDelivered = protocol.WordNotDelivered
)

// settleDeliveries tells, in order, the pending nudges whose delivery is
// known; final (a trip, the end) decides every one. The ack file is the
// agent's to write: it decides only these words, never a verdict.
func (r *runner) settleDeliveries(ctx context.Context, eng *monitor.Engine, final bool) error {
	if len(r.pending) == 0 && !final {
		return nil
	}
	acks, err := nudgefile.ReadAcks(r.cfg.NudgeDir)
	if err != nil && r.cfg.delivers() {
		r.log.Error(err, "cannot read the hook's acknowledgements", "dir", r.cfg.NudgeDir)
	}
	steps := eng.State().Steps
	r.lookedAt = steps
	for len(r.pending) > 0 {
		p := r.pending[0]
		word := ""
		switch {
		case p.unwritten:
			word = wordNotDelivered + ": the nudges file could not be written"
		case acks.Delivered(p.seq):
			word = wordDelivered
		case final:
			word = wordNotDelivered + ": no hook acknowledged it before the turn ended"
		case p.after >= deliverySlack:
			word = wordNotDelivered + ": no hook acknowledged it by the second tool call after it"
		default:
			return nil
		}
		r.pending = r.pending[1:]
		if !acks.Ran && !p.unwritten && eng.State().Answered > 0 {
			r.hooksNotRun()
		}
		r.logNudge(p, word)
		if err := r.rep.silent(ctx, p.n.Detector, conditionText(p.n, p.warning, word)); err != nil {
			return err
		}
	}
	// A call refused by the CLI itself (Gemini CLI's read_file of a
	// missing path) runs no hook: only a call that ran counts.
	if final && r.cfg.delivers() && !acks.Ran && eng.State().Answered > 0 {
		r.hooksNotRun()
	}
	return nil
}

// hooksNotRun warns, once, with the sidecar's next write, that no hook ran
// in a turn that needs one.
func (r *runner) hooksNotRun() {
	if r.hooksTold {
		return
	}
	r.hooksTold = true
	r.log.Info("no turnwatch hook ran in this turn", "dir", r.cfg.NudgeDir)
	r.rep.warn(protocol.ConditionHooksNotRun, protocol.ReasonHooksNotRun, hooksNotRunMessage)
}

// hooksNotRunMessage is ConditionHooksNotRun's message.
const hooksNotRunMessage = "no turnwatch hook ran in this turn although tool calls ran: nudges cannot reach the model " +
	"(is the CLI started with its hooks off, or not wired to the turnwatch adapter? docs/nudges.md)"

func (r *runner) logNudge(p pendingNudge, delivery string) {
	r.log.Info("nudge", "detector", p.n.Detector, "message", p.n.Message, "line", p.n.Line, "seq", p.seq, "warning", p.warning, "delivery", delivery)
}

// conditionText is the nudge as the Pod condition (and the AgentRun Event)
// tells it: a warning names its detector, and each says whether the agent
// was told.
func conditionText(n monitor.Nudge, warning bool, delivered string) string {
	text := n.Message
	if warning {
		text = "warning (" + n.Detector + "): " + text
	}
	if delivered != "" {
		text += " [" + delivered + "]"
	}
	return text
}
