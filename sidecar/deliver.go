package main

import (
	"context"
	"os"
	"path/filepath"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// hookName is turnwatch-hook's file name, next to the sidecar's binary in
// the image.
const hookName = "turnwatch-hook"

// delivers says whether nudges reach the agent through the shared volume.
func (c runConfig) delivers() bool { return c.NudgeDir != "" && c.Guards.Delivers() }

// installHook copies turnwatch-hook into the shared volume, for the agent
// CLI's hook to run. A failure is logged, not fatal: the nudges file is
// still written, and the watchdog's own job does not depend on it.
func (r *runner) installHook() {
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

// nudges delivers what one line (or the end) said: to the agent first, in
// the nudges file, then to the humans through the Pod condition, whose
// text says whether the agent was told. Nudges are numbered in the turn's
// order, from the engine's count, so a replay after a restart writes the
// same numbers and the hook shows each once.
func (r *runner) nudges(ctx context.Context, eng *monitor.Engine, ns []monitor.Nudge) error {
	first := eng.NudgeCount() - len(ns) + 1
	for i, n := range ns {
		warning := n.Detector != monitor.DetectorSilentRun
		delivered := ""
		if r.cfg.delivers() {
			rec := nudgefile.Record{Seq: first + i, Time: r.now(), Detector: n.Detector, Message: n.Message, Line: n.Line, Warning: warning}
			if err := nudgefile.Append(r.cfg.NudgeDir, rec); err != nil {
				r.log.Error(err, "cannot deliver a nudge to the agent", "seq", rec.Seq)
				delivered = "not delivered to the agent"
			} else {
				delivered = "delivered to the agent"
			}
		}
		r.log.Info("nudge", "detector", n.Detector, "message", n.Message, "line", n.Line, "warning", warning, "delivery", delivered)
		if err := r.rep.silent(ctx, n.Detector, conditionText(n, warning, delivered)); err != nil {
			return err
		}
	}
	return nil
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
