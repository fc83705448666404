package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/test/internal/proc"
)

// floodTimer times the sidecar's read of a log that is all backlog (-flood:
// the agent's whole output is logged before the sidecar starts). The first
// log stream serves it all; the sidecar asks for the next one only once it
// read that one to its end (the agent has exited, so it reads from its
// cursor again to make sure). So the time from the first stream's start to
// the second request is how long the sidecar took to read the whole log.
type floodTimer struct {
	mu       sync.Mutex
	requests int
	start    time.Time
	end      time.Time
	bytes    int64
	done     chan struct{}
	finished chan string // the sidecar's summary, once
}

func newFloodTimer() *floodTimer {
	return &floodTimer{done: make(chan struct{}), finished: make(chan string, 1)}
}

// patched takes the summary from a status patch that carries Finished.
func (f *floodTimer) patched(r *http.Request) {
	if f == nil {
		return
	}
	var patch struct {
		Status struct {
			Conditions []struct{ Type, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
		return
	}
	for _, c := range patch.Status.Conditions {
		if c.Type == protocol.ConditionFinished {
			select {
			case f.finished <- c.Message:
			default:
			}
		}
	}
}

// summary prints the sidecar's summary (its lines read), so that a fast
// read is seen to be a whole one.
func (f *floodTimer) summary(limit time.Duration) error {
	select {
	case s := <-f.finished:
		fmt.Println("flood: the sidecar's summary:", s)
		return nil
	case <-time.After(limit):
		return fmt.Errorf("no summary from the sidecar within %s", limit)
	}
}

// request notes a log request and says whether it is the first, whose bytes
// count.
func (f *floodTimer) request() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	switch f.requests {
	case 1:
		f.start = time.Now()
	case 2:
		f.end = time.Now()
		close(f.done)
	}
	return f.requests == 1
}

// wrote counts n bytes served on the first stream.
func (f *floodTimer) wrote(n int) {
	f.mu.Lock()
	f.bytes += int64(n)
	f.mu.Unlock()
}

// report waits for the sidecar to have read the whole log (at most limit)
// and prints the read rate and the sidecar's CPU from its start.
func (f *floodTimer) report(pid int, limit time.Duration) error {
	cpu0 := proc.CPU(pid)
	select {
	case <-f.done:
	case <-time.After(limit):
		return fmt.Errorf("the sidecar did not read the log within %s", limit)
	}
	cpu := proc.CPU(pid) - cpu0
	f.mu.Lock()
	defer f.mu.Unlock()
	wall := f.end.Sub(f.start)
	fmt.Printf("flood: read %.1f MB in %.2f s = %.1f MB/s; sidecar CPU %.2f s = %.1f MB per CPU-second\n",
		float64(f.bytes)/1e6, wall.Seconds(), float64(f.bytes)/1e6/wall.Seconds(), cpu.Seconds(),
		float64(f.bytes)/1e6/cpu.Seconds())
	return nil
}
