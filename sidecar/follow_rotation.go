package sidecar

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet rotates a container's log once it passes containerLogMaxSize
// (10 MiB by default, looked at every containerLogMonitorInterval, 10 s): it
// renames the file and the runtime starts a new one; older files are
// compressed, and deleted past containerLogMaxFiles. The log API serves the
// current file only. A live stream holds the file it reads open and reads it
// to its end before it moves on to the file that is current then
// (k8s.io/cri-client pkg/logs, ReadLogs), so one rotation loses nothing; but
// a stream two rotations behind skips the file between, a stream ends at the
// end of the file it holds once the container has exited, and a new stream
// (a resume after a drop, the confirming read at the end, a restarted
// sidecar) starts in the current file. Lines in between were rotated away
// unread, and nothing brings them back: the sidecar says so
// (protocol.ConditionLogRotated, at once: run_loop.go), and the controller
// puts it on the turn as a warning. It finds out two ways:
//   - a resumed stream whose first line is not the first line the cursor
//     counted (checkResume): the file that held the cursor's lines was
//     rotated away, with whatever followed them. The stream then skips by
//     time, not by the cursor's count, which would skip new lines.
//   - while it lags (a line read rotationProbeLag or more after its
//     timestamp), at most once per rotationProbeEvery, it reads the start of
//     the current file (limitBytes): a first line younger than the line it
//     is reading means the log was rotated past that line.
const (
	rotationProbeLag     = 2 * time.Second
	rotationProbeEvery   = 10 * time.Second
	rotationProbeBytes   = 256 // enough for the first line's timestamp
	rotationProbeTimeout = 5 * time.Second
)

// rotationWatch is what the follower found out about rotations.
type rotationWatch struct {
	mu        sync.Mutex
	note      string // the warning, once found
	told      bool   // note was handed to the run loop
	lastProbe time.Time
}

// found keeps the first warning.
func (w *rotationWatch) found(note string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.note == "" {
		w.note = note
	}
}

// take returns the warning once it was found, and once only.
func (w *rotationWatch) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.told || w.note == "" {
		return ""
	}
	w.told = true
	return w.note
}

// probeDue says whether a line read at now, stamped at, calls for a look at
// the current file, and if so counts the look as made.
func (w *rotationWatch) probeDue(at, now time.Time) bool {
	if at.IsZero() || now.Sub(at) < rotationProbeLag {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.note != "" || (!w.lastProbe.IsZero() && now.Sub(w.lastProbe) < rotationProbeEvery) {
		return false
	}
	w.lastProbe = now
	return true
}

// lineSum is the digest of a log line that tells it from another line
// stamped the same.
func lineSum(data []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// rotatedMessage is the warning for a log the kubelet rotated past the line
// stamped at.
func rotatedMessage(at time.Time, how string) string {
	return fmt.Sprintf("the kubelet rotated the agent's log past the line of %s the sidecar was reading (%s): lines may have been rotated away unread",
		at.UTC().Format(time.RFC3339Nano), how)
}

// LogRotated returns, once, the warning that the log was rotated past the
// line the follower was reading ("" before and after).
func (s *podLogSource) LogRotated() string { return s.rotation.take() }

// checkResume looks at a resumed stream's first line, data. The kubelet
// sends the lines not before the cursor's second, from the current file, so
// the first one is the first line the cursor counted (its timestamp and its
// digest), unless the log was rotated past it. Then the warning is recorded
// and the stream skips by time: the lines stamped up to the newest
// delivered (lines stamped to the nanosecond as that one, on either side of
// the rotation, are taken as read). A sidecar restarted from a checkpoint
// knows only the cursor's second: a first line in a later second tells it,
// and nothing was delivered since the restart to skip.
func (s *podLogSource) checkResume(data []byte, skip *resumeSkip) {
	c := s.cursor
	t, ok := parseLogTime(data)
	if c.seen == 0 || !ok {
		return
	}
	if c.first.IsZero() && !t.Truncate(time.Second).After(c.since) || !c.first.IsZero() && t.Equal(c.first) && lineSum(data) == c.sum {
		return
	}
	s.log.Info("the log resumed past a rotation", "since", c.since, "skip", c.seen, "firstCounted", c.first, "firstLine", t)
	s.rotation.found(rotatedMessage(c.since, "a new log stream starts at "+t.UTC().Format(time.RFC3339Nano)))
	*skip = resumeSkip{through: c.last}
}

// probeRotation reads the timestamp of the current file's first line and
// compares it with at, the line being read, when the follower lags (see
// rotationWatch.probeDue). A probe that fails says nothing.
func (s *podLogSource) probeRotation(ctx context.Context, at time.Time) {
	now := s.clock.Now()
	if !s.rotation.probeDue(at, now) {
		return
	}
	first, err := s.firstLineTime(ctx)
	if err != nil {
		s.log.V(1).Info("reading the log's first line failed", "err", err.Error())
		return
	}
	if first.After(at) {
		s.log.Info("the log was rotated past the line being read", "line", at, "lag", now.Sub(at).String(), "firstLine", first)
		s.rotation.found(rotatedMessage(at, fmt.Sprintf("%s behind; the log now starts at %s", now.Sub(at).Round(time.Millisecond),
			first.UTC().Format(time.RFC3339Nano))))
	}
}

// firstLineTime is the timestamp of the first line of the log's current
// file.
func (s *podLogSource) firstLineTime(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, rotationProbeTimeout)
	defer cancel()
	limit := int64(rotationProbeBytes)
	rc, err := s.client.podLog(ctx, s.namespace, s.pod, &corev1.PodLogOptions{Container: s.container, Timestamps: true, LimitBytes: &limit})
	if err != nil {
		return time.Time{}, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 2*rotationProbeBytes))
	if err != nil {
		return time.Time{}, err
	}
	t, ok := parseLogTime(b)
	if !ok {
		return time.Time{}, fmt.Errorf("no timestamp at the log's start")
	}
	return t, nil
}
