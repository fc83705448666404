package testenv

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// SyncBuffer is a bytes.Buffer that several writers (a child process's
// stdout and stderr, goroutines) share.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor calls cond until it returns true, returns an error, or timeout
// passes. It looks again every interval, and at once when wake's channel
// (taken before each call of cond) fires; wake may be nil.
func WaitFor(ctx context.Context, timeout, every time.Duration, what string, wake func() <-chan struct{}, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var ch <-chan struct{}
		if wake != nil {
			ch = wake()
		}
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		case <-ch:
		case <-time.After(every):
		}
	}
}
