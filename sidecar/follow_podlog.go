package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
type logCursor struct {
	since time.Time // a whole second; zero before the first line
	seen  int       // delivered lines with timestamp >= since
}

// advance records that a line with timestamp t was delivered.
func (c *logCursor) advance(t time.Time) {
	sec := t.Truncate(time.Second)
	switch {
	case sec.After(c.since):
		c.since, c.seen = sec, 1
	case !t.Before(c.since):
		c.seen++
	}
	// A line older than the cursor's second is not resent on resume.
}

// podLogSource follows a container's log through the pods/log API with
// follow and timestamps on, reconnecting where it stopped.
type podLogSource struct {
	client    kubernetes.Interface
	namespace string
	pod       string
	container string
	// agentDone says whether the agent container has terminated; a stream
	// that ends while it is still running was dropped.
	agentDone func(context.Context) (bool, error)
	maxLine   int
	backoff   backoff
	log       logr.Logger

	cursor    logCursor
	connected atomic.Bool
}

// Connected reports whether a log stream is open right now.
func (s *podLogSource) Connected() bool { return s.connected.Load() }

// Follow streams the log until the agent container terminated and its log
// was read to the end. Every drop is followed by a resume from the cursor.
func (s *podLogSource) Follow(ctx context.Context, emit func(streamLine) error) error {
	final := false // the agent had terminated before the current stream opened
	delay := s.backoff.first()
	for {
		opened, err := s.stream(ctx, final, emit)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var emitErr emitError
		if errors.As(err, &emitErr) {
			return emitErr.err
		}
		if err == nil && final {
			return nil // the whole log of a terminated container was read
		}
		if opened {
			delay = s.backoff.first() // it was streaming: a fresh drop
		}
		if !final {
			done, derr := s.agentDone(ctx)
			if derr != nil {
				return derr
			}
			final = done
		}
		if err != nil {
			s.log.Info("log stream failed; resuming", "err", err.Error(), "since", s.cursor.since, "skip", s.cursor.seen, "in", delay)
		} else if !final {
			s.log.Info("log stream ended while the agent runs; resuming", "since", s.cursor.since, "skip", s.cursor.seen)
		}
		// A terminated agent's log is read again at once: that stream ends
		// after its last line. Anything else waits before resuming.
		if err != nil || !final {
			if !sleepCtx(ctx, delay) {
				return ctx.Err()
			}
			delay = s.backoff.next(delay)
		}
	}
}

// emitError marks an error returned by the consumer, which ends following.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }

// stream reads one connection to its end: nil on a clean end of stream.
// opened says whether the log could be opened at all. When final is set the
// container had terminated before the stream opened, so a clean end is the
// end of its log and a last line without newline is whole.
func (s *podLogSource) stream(ctx context.Context, final bool, emit func(streamLine) error) (bool, error) {
	opts := &corev1.PodLogOptions{Container: s.container, Follow: true, Timestamps: true}
	if !s.cursor.since.IsZero() {
		opts.SinceTime = &metav1.Time{Time: s.cursor.since}
	}
	rc, err := s.client.CoreV1().Pods(s.namespace).GetLogs(s.pod, opts).Stream(ctx)
	if err != nil {
		return false, fmt.Errorf("opening the log: %w", err)
	}
	defer rc.Close()
	s.connected.Store(true)
	defer s.connected.Store(false)

	skip := s.cursor.seen
	lr := newLineReader(rc, s.maxLine)
	for {
		data, cut, err := lr.next()
		if errors.Is(err, errPartialLine) && final {
			data, cut, _ = lr.flush()
			err = io.EOF
			if err := s.deliver(data, cut, &skip, emit); err != nil {
				return true, err
			}
		}
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			// A last line without newline was cut off by the drop: the
			// resumed stream sends it again, whole.
			return true, err
		}
		if err := s.deliver(data, cut, &skip, emit); err != nil {
			return true, err
		}
	}
}

// deliver emits one line unless the cursor says it was delivered before the
// reconnect (the first skip lines not older than the cursor's second).
func (s *podLogSource) deliver(data []byte, cut bool, skip *int, emit func(streamLine) error) error {
	t, ok := parseLogTime(data)
	if !ok {
		// Without a timestamp the line cannot be placed; with follow and
		// timestamps on the kubelet always sends one.
		s.log.V(1).Info("log line without a timestamp", "bytes", len(data))
	}
	if ok && *skip > 0 && !t.Before(s.cursor.since) {
		*skip--
		return nil
	}
	if err := emit(streamLine{Data: append([]byte(nil), data...), Time: t, Cut: cut}); err != nil {
		return emitError{err}
	}
	if ok {
		s.cursor.advance(t)
	}
	return nil
}
