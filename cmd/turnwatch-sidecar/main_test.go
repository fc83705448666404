package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the writers a child process and
// watch's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	code = dispatch(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	if code, _, errs := run(t, "", "nope"); code != 2 || !strings.Contains(errs, `unknown command "nope"`) || !strings.Contains(errs, "replay") {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	if code, _, errs := run(t, ""); code != 2 || !strings.Contains(errs, "watch") {
		t.Fatalf("code %d stderr %q", code, errs)
	}
}
