package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// logCursor is where the follower stands in the container's log, in a form
// that survives a reconnect. The log API resumes only from a whole second
// (sinceTime has second precision) and the kubelet sends, in log order, every
// line whose timestamp is not before it. So the cursor keeps that second and
// how many lines it already delivered whose timestamp is not before it: a
// resumed stream skips exactly that many and goes on with the first new line.
// Counting positions rather than comparing timestamps keeps lines that share
// a timestamp, and lines whose timestamps are slightly out of order (stdout
// and stderr interleaved), exact.
//
// The count holds only while the log still holds the cursor's second from
// its start: a log the kubelet rotated past the cursor does not
// (follow_rotation.go). So the cursor also keeps the exact timestamps of the
// first line it counted and of the newest line delivered, to tell a rotated
// log and to skip by time there. These two are not checkpointed (a restarted
// sidecar has only the second and the count).
type logCursor struct {
	since time.Time // a whole second; zero before the first line
	seen  int       // delivered lines with timestamp >= since
	first time.Time // the timestamp of the first line counted in seen
	sum   uint64    // and a digest of that line, timestamp included
	last  time.Time // the newest timestamp delivered
}

// advance records that a line with timestamp t was delivered.
func (c *logCursor) advance(t time.Time) {
	sec := t.Truncate(time.Second)
	switch {
	case sec.After(c.since):
		c.since, c.seen, c.first = sec, 1, t
	case !t.Before(c.since):
		c.seen++
	}
	// A line older than the cursor's second is not resent on resume.
	if t.After(c.last) {
		c.last = t
	}
}

// resumeSkip is how a resumed stream passes over the lines delivered
// before: the cursor's count of its second's lines, or, in a log rotated
// past the cursor, every line stamped up to the newest delivered.
type resumeSkip struct {
	count   int       // lines not before the cursor's second still to skip
	through time.Time // with a rotated log: skip lines stamped up to this
}

// covers says whether the line stamped t, resent in a resumed stream, was
// delivered before.
func (k *resumeSkip) covers(t, since time.Time) bool {
	switch {
	case !k.through.IsZero():
		if !t.After(k.through) {
			return true
		}
		k.through = time.Time{} // the first newer line ends the skip
	case k.count > 0 && !t.Before(since):
		k.count--
		return true
	}
	return false
}

// podLogSource follows a container's log through the pods/log API with
// follow and timestamps on, reconnecting where it stopped.
type podLogSource struct {
	client    *kubeClient
	namespace string
	pod       string
	container string
	// agentDone says whether the agent container has terminated; a stream
	// that ends while it is still running was dropped.
	agentDone func(context.Context) (bool, error)
	maxLine   int
	backoff   backoff
	log       logr.Logger
	// clock dates the refusals (see refusals).
	clock clock.PassiveClock

	cursor    logCursor
	last      time.Time // the timestamp of the last line delivered
	connected atomic.Bool
	// rotation is what the follower found out about log rotations
	// (follow_rotation.go).
	rotation rotationWatch

	// Reopen support (a half-open stream looks like silence): the current
	// stream's cancel, how many streams opened, and whether the current one
	// was ended on purpose.
	mu       sync.Mutex
	cancel   context.CancelFunc
	opened   atomic.Uint64
	reopened atomic.Bool
}

// Reopen ends the current log stream so that Follow opens a new one from the
// cursor at once: a connection the kubelet or the API server left half open
// sends nothing more, while a new one sends what the log holds.
func (s *podLogSource) Reopen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.reopened.Store(true)
		s.cancel()
	}
}

// Resume starts the follower at cur (a checkpoint's cursor) instead of the
// log's beginning. Call it before Follow.
func (s *podLogSource) Resume(cur logCursor) { s.cursor = cur }

// Opened counts the log streams opened so far.
func (s *podLogSource) Opened() uint64 { return s.opened.Load() }

// Connected reports whether a log stream is open right now.
func (s *podLogSource) Connected() bool { return s.connected.Load() }

// Follow streams the log until the agent container terminated and its log
// was read to the end. Every drop is followed by a resume from the cursor.
//
// A clean end of a stream proves little: the API server relays the kubelet's
// stream, and when that one breaks it ends its own response cleanly. So the
// end of the log counts as reached only once a stream opened after the agent
// terminated brings nothing new: no line, and no unterminated last line but
// the one the stream before it ended with (then that line is whole: the
// agent's last write had no newline). What this cannot tell apart: a stream
// that breaks cleanly right after resending the lines already seen looks like
// the end of the log; that takes a break of the kubelet's stream at exactly
// that point, after the agent exited.
func (s *podLogSource) Follow(ctx context.Context, emit func(streamLine) error) error {
	var (
		final bool   // the agent had terminated before the current stream opened
		tail  []byte // the unterminated line the previous final stream ended with
		delay = s.backoff.first()
		// A refusal is final only once it lasts: the API server may be
		// starting up (see refusals).
		refusal = refusals{grace: s.backoff.refusalGrace}
	)
	for {
		wasFinal := final
		res, err := s.stream(ctx, emit)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var emitErr emitError
		if errors.As(err, &emitErr) {
			return emitErr.err
		}
		lasting := refusal.lasting(err, s.clock.Now())
		if f := logFailure(err); f != nil && lasting {
			return f // refused or gone for good: the sidecar ends with the reason
		}
		if res.opened {
			delay = s.backoff.first() // it was streaming: a fresh drop
		}
		if s.reopened.Swap(false) {
			s.log.Info("reopening the log stream to confirm a silence", "since", s.cursor.since, "skip", s.cursor.seen)
			continue
		}
		if err == nil && final && res.delivered == 0 && bytes.Equal(res.partial, tail) {
			if len(tail) == 0 && !res.cut {
				return nil
			}
			_, err := s.deliver(tail, res.cut, &resumeSkip{}, emit)
			return err
		}
		if !final {
			done, derr := s.agentDone(ctx)
			if derr != nil {
				return derr
			}
			final = done
		}
		tail = nil
		switch {
		case err != nil:
			s.log.Info("log stream failed; resuming", "err", err.Error(), "since", s.cursor.since, "skip", s.cursor.seen, "in", delay)
		case !final:
			s.log.Info("log stream ended while the agent runs; resuming", "since", s.cursor.since, "skip", s.cursor.seen, "in", delay)
		default:
			// The agent has exited: read from the cursor again, at once if
			// this stream brought news, to make sure the log is all read.
			tail = res.partial
			if res.delivered > 0 || !wasFinal {
				continue
			}
		}
		if !sleepCtx(ctx, delay) {
			return ctx.Err()
		}
		delay = s.backoff.next(delay)
	}
}

// emitError marks an error returned by the consumer, which ends following.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }

// streamResult is what one connection to the log brought.
type streamResult struct {
	opened    bool   // the log could be opened
	delivered int    // new lines emitted
	partial   []byte // a last line without newline at a clean end, not emitted
	cut       bool   // partial was longer than the bound
}

// stream reads one connection to its end: nil on a clean end of stream.
func (s *podLogSource) stream(ctx context.Context, emit func(streamLine) error) (streamResult, error) {
	var res streamResult
	opts := &corev1.PodLogOptions{Container: s.container, Follow: true, Timestamps: true}
	if !s.cursor.since.IsZero() {
		opts.SinceTime = &metav1.Time{Time: s.cursor.since}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
	}()
	rc, err := s.client.podLog(ctx, s.namespace, s.pod, opts)
	if err != nil {
		return res, fmt.Errorf("opening the log: %w", err)
	}
	defer rc.Close()
	res.opened = true
	s.opened.Add(1)
	s.connected.Store(true)
	defer s.connected.Store(false)

	skip := resumeSkip{count: s.cursor.seen}
	lr := newLineReader(rc, s.maxLine)
	for first := true; ; first = false {
		data, cut, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return res, nil
		case errors.Is(err, errPartialLine):
			data, cut, _ := lr.flush()
			res.partial, res.cut = append([]byte(nil), data...), cut
			return res, nil
		case err != nil:
			return res, err // a line cut off by the drop is sent again, whole
		}
		if first {
			s.checkResume(data, &skip)
		}
		sent, err := s.deliver(data, cut, &skip, emit)
		if err != nil {
			return res, err
		}
		if sent {
			res.delivered++
			s.probeRotation(ctx, s.last)
		}
	}
}

// deliver emits one line unless skip says it was delivered before the
// reconnect (resumeSkip).
func (s *podLogSource) deliver(data []byte, cut bool, skip *resumeSkip, emit func(streamLine) error) (bool, error) {
	t, ok := parseLogTime(data)
	if !ok {
		// Without a timestamp the line cannot be placed; with follow and
		// timestamps on the kubelet always sends one.
		s.log.V(1).Info("log line without a timestamp", "bytes", len(data))
	}
	if ok && skip.covers(t, s.cursor.since) {
		return false, nil
	}
	next := s.cursor
	if ok {
		if s.last.IsZero() {
			s.log.Info("read the first line", "line", t, "lag", s.clock.Now().Sub(t).String())
		}
		next.advance(t)
		if !next.since.Equal(s.cursor.since) {
			next.sum = lineSum(data)
		}
		s.last = t
	}
	l := newLine(data, t, cut)
	l.Cursor = next
	if err := emit(l); err != nil {
		return false, emitError{err}
	}
	s.cursor = next
	return true, nil
}
