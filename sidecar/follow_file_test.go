package sidecar

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// fileStep is one thing the fake agent does to its stream file.
type fileStep struct {
	write   string // appended (the file is created by the first write)
	replace string // the file is replaced by a new one with this content
	trunc   bool   // the file is truncated to nothing
}

func TestFileSource(t *testing.T) {
	cases := []struct {
		name    string
		steps   []fileStep
		maxLine int
		want    []string
		cut     []int // indexes of lines delivered cut
	}{
		{name: "lines written in pieces", steps: []fileStep{{write: "a\nb"}, {write: "b\n"}, {write: "c\nd"}},
			want: []string{"a", "bb", "c", "d"}},
		{name: "no output at all"},
		{name: "replaced like a rotation", steps: []fileStep{{write: "1\n2\n"}, {replace: "3\n"}, {write: "4\n"}},
			want: []string{"1", "2", "3", "4"}},
		{name: "truncated and written anew", steps: []fileStep{{write: "1\n2\n"}, {trunc: true}, {write: "3\n"}},
			want: []string{"1", "2", "3"}},
		{name: "over-long line is cut", maxLine: 4, steps: []fileStep{{write: "0123456789\nok\n"}},
			want: []string{"0123", "ok"}, cut: []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stream.jsonl")
			var exited atomic.Bool
			src := &fileSource{path: path, poll: time.Millisecond, donePoll: 5 * time.Millisecond, maxLine: tc.maxLine,
				log: testLogger(t), clock: clock.RealClock{},
				agentDone: func(context.Context) (bool, error) { return exited.Load(), nil }}

			var got []string
			var cut []int
			done := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			go func() {
				done <- src.Follow(ctx, func(l streamLine) error {
					if l.Cut {
						cut = append(cut, len(got))
					}
					got = append(got, string(l.Data))
					return nil
				})
			}()
			for _, s := range tc.steps {
				time.Sleep(20 * time.Millisecond) // let the follower reach the end first
				apply(t, path, s)
			}
			time.Sleep(20 * time.Millisecond)
			exited.Store(true)
			if err := <-done; err != nil {
				t.Fatalf("Follow: %v", err)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(cut, tc.cut) {
				t.Fatalf("got %q (cut %v), want %q (cut %v)", got, cut, tc.want, tc.cut)
			}
		})
	}
}

// A file that is written until the agent exits is read to its very end,
// even a last line written just before the exit.
func TestFileSourceReadsToTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var exited atomic.Bool
	src := &fileSource{path: path, poll: time.Millisecond, donePoll: time.Millisecond, log: testLogger(t), clock: clock.RealClock{},
		agentDone: func(context.Context) (bool, error) { return exited.Load(), nil }}
	n := 0
	done := make(chan error, 1)
	go func() {
		done <- src.Follow(context.Background(), func(streamLine) error { n++; return nil })
	}()
	const lines = 2000
	for i := range lines {
		fmt.Fprintf(f, "{\"n\":%d}\n", i)
	}
	f.Close()
	exited.Store(true) // at once: the follower has not read it all yet
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != lines {
		t.Fatalf("read %d lines, want %d", n, lines)
	}
}

func apply(t *testing.T, path string, s fileStep) {
	t.Helper()
	var err error
	switch {
	case s.write != "":
		var f *os.File
		if f, err = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, err = f.WriteString(s.write)
			f.Close()
		}
	case s.replace != "":
		tmp := path + ".new"
		if err = os.WriteFile(tmp, []byte(s.replace), 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
	case s.trunc:
		err = os.Truncate(path, 0)
	}
	if err != nil {
		t.Fatal(strings.TrimSpace(err.Error()))
	}
}
