package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// A checkpoint is the engine's state after a line, the calls judged for the
// agent's hook up to the same line (Calls: its refusals go on where they
// stood, docs/nudges.md) and the log cursor after that line, in the
// sidecar's own volume (TURNWATCH_STATE_DIR). A restarted sidecar restores
// the engine and the calls and resumes the log from the cursor: the lines
// before it are never needed again, so a log the kubelet rotated
// (containerLogMaxSize) loses nothing that was checkpointed. It is one file,
// replaced atomically (written aside, fsync'd, renamed); its size is bounded
// by the engine's snapshot (monitor.Engine.Checkpoint: at most 4096 call ids,
// a few hundred KiB at worst) and the calls' (at most 4096 ids and 4096
// signatures), so disk use is one such file plus its temporary twin.
type checkpoint struct {
	Since  time.Time `json:"since"`
	Seen   int       `json:"seen"`
	Engine []byte    `json:"engine"`
	// Calls is absent in a checkpoint written before it existed, or without
	// refusing: the calls start over.
	Calls *CallsState `json:"calls,omitempty"`
}

const (
	checkpointName = "checkpoint.json"
	// defaultCheckpointPeriod is the least time between two checkpoints:
	// the lines after the last one are read again from the log on restart,
	// so this is what a rotation right before a crash can lose. Each one
	// encodes the engine and fsyncs; once a second that was a tenth of the
	// sidecar's CPU at 100 lines a second (docs/performance.md, "Sidecar
	// footprint"). The kubelet rotates at containerLogMaxSize (10 MiB by
	// default), minutes apart at such rates.
	defaultCheckpointPeriod = 5 * time.Second
)

// resumer is a source that can start from a cursor (the pods/log source).
type resumer interface {
	Resume(logCursor)
}

// checkpointer writes checkpoints at most once per period.
type checkpointer struct {
	path   string
	period time.Duration
	clock  clock.PassiveClock
	log    logr.Logger

	last   time.Time
	dirty  bool
	cursor logCursor
	// calls are the runner's judged calls, saved with the engine when the
	// guards refuse (nil: none).
	calls *Calls
}

func newCheckpointer(dir string, period time.Duration, clk clock.PassiveClock, log logr.Logger) *checkpointer {
	return &checkpointer{path: filepath.Join(dir, checkpointName), period: period, clock: clk, log: log}
}

// load reads the checkpoint; nil without error when there is none.
func (c *checkpointer) load() (*checkpoint, error) {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	return &cp, nil
}

// fed records that the engine folded a line whose cursor is cur, and writes
// a checkpoint when the period allows.
func (c *checkpointer) fed(eng *monitor.Engine, cur logCursor) {
	c.cursor, c.dirty = cur, true
	c.flush(eng)
}

// changed records that the engine folded something besides a line (the
// model's side): the cursor stays, the state is new.
func (c *checkpointer) changed(eng *monitor.Engine) {
	c.dirty = true
	c.flush(eng)
}

// flush writes the pending checkpoint when the period allows. A failed
// write is logged and tried again later: without a checkpoint a restart
// replays the log, as a sidecar without a state volume does.
func (c *checkpointer) flush(eng *monitor.Engine) {
	if !c.dirty || c.clock.Now().Sub(c.last) < c.period {
		return
	}
	if err := c.save(eng); err != nil {
		c.log.Info("writing the checkpoint failed", "err", err.Error())
		return
	}
	c.last, c.dirty = c.clock.Now(), false
}

func (c *checkpointer) save(eng *monitor.Engine) error {
	state, err := eng.Checkpoint()
	if err != nil {
		return err
	}
	cp := checkpoint{Since: c.cursor.since, Seen: c.cursor.seen, Engine: state}
	if c.calls != nil {
		st := c.calls.State()
		cp.Calls = &st
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

// restore builds the engine from the checkpoint, if there is a usable one,
// and starts the source at its cursor; else a fresh engine.
func (r *runner) restore(ck *checkpointer) (*monitor.Engine, error) {
	fresh := func() (*monitor.Engine, error) { return monitor.New(r.cfg.engineOptions()) }
	res, ok := r.src.(resumer)
	if ck == nil || !ok {
		return fresh()
	}
	cp, err := ck.load()
	if err != nil || cp == nil {
		if err != nil {
			r.log.Info("ignoring the checkpoint; replaying the log", "err", err.Error())
		}
		return fresh()
	}
	eng, err := fresh()
	if err != nil {
		return nil, err
	}
	if err := eng.Restore(cp.Engine); err != nil {
		r.log.Info("ignoring the checkpoint; replaying the log", "err", err.Error())
		return fresh()
	}
	if cp.Calls != nil {
		r.calls.Restore(*cp.Calls)
	}
	cur := logCursor{since: cp.Since, seen: cp.Seen}
	res.Resume(cur)
	ck.cursor = cur
	r.log.Info("resumed from the checkpoint", "lines", eng.Report().Lines, "since", cp.Since, "skip", cp.Seen)
	return eng, nil
}
