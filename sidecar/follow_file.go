package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// fileSource follows a file in a shared volume like `tail -F`: it waits for
// the file to appear, reads lines as they are appended, starts over on a
// file that was replaced or truncated, and ends once the agent container
// terminated and the file was read to its end.
type fileSource struct {
	path      string
	agentDone func(context.Context) (bool, error)
	// poll is how often the end of the file is read again.
	poll time.Duration
	// donePoll is how often, while no line arrives, the agent's state is read.
	donePoll time.Duration
	maxLine  int
	log      logr.Logger
	clock    clock.PassiveClock

	open atomic.Bool
}

// Connected reports whether the file is open: before the agent writes it,
// there is nothing to judge.
func (s *fileSource) Connected() bool { return s.open.Load() }

// Follow delivers the file's lines until the agent terminated.
func (s *fileSource) Follow(ctx context.Context, emit func(streamLine) error) error {
	var (
		f        *os.File
		lr       *lineReader
		lastDone time.Time // when the agent's state was last read
		final    bool      // the agent had terminated before this pass
	)
	defer func() {
		if f != nil {
			f.Close()
		}
		s.open.Store(false)
	}()
	for {
		if f == nil {
			var err error
			if f, err = os.Open(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("opening the stream file: %w", err)
			}
			if f != nil {
				lr = newLineReader(f, s.maxLine)
				s.open.Store(true)
			}
		}
		if f != nil {
			if err := s.drain(lr, emit); err != nil {
				return err
			}
			if final {
				if line, cut, ok := lr.flush(); ok {
					return emit(newLine(line, time.Time{}, cut))
				}
				return nil
			}
			if s.replaced(f, lr) {
				s.log.Info("stream file replaced or truncated; reading it from the start", "path", s.path)
				f.Close()
				f = nil
				continue
			}
		} else if final {
			return nil // the agent ended without writing the file
		}
		if s.clock.Now().Sub(lastDone) >= s.donePoll {
			lastDone = s.clock.Now()
			done, err := s.agentDone(ctx)
			if err != nil {
				return err
			}
			if done {
				final = true
				continue // one more pass reads what was written before it ended
			}
		}
		if !sleepCtx(ctx, s.poll) {
			return ctx.Err()
		}
	}
}

// drain emits every complete line up to the current end of the file.
func (s *fileSource) drain(lr *lineReader, emit func(streamLine) error) error {
	for {
		line, cut, err := lr.next()
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, errPartialLine):
			return nil
		case err != nil:
			return fmt.Errorf("reading the stream file: %w", err)
		}
		if err := emit(newLine(line, time.Time{}, cut)); err != nil {
			return err
		}
	}
}

// replaced says whether the path now names another file (rotated, written
// anew) or the open file shrank below what was read (truncated).
func (s *fileSource) replaced(f *os.File, lr *lineReader) bool {
	byPath, err := os.Stat(s.path)
	if err != nil {
		return false // removed: keep the open file, it may still grow
	}
	open, err := f.Stat()
	if err != nil {
		return true
	}
	return !os.SameFile(byPath, open) || open.Size() < lr.read
}
