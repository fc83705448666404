// Package proc reads a process's CPU time and resident set from /proc, for
// the footprint measurements (test/e2e's TestSidecarFootprint and
// test/sidecarload).
package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the process's user + system CPU time; -1 once it is gone.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command may hold spaces: fields count from after its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond // clock ticks of 10 ms
}

// RSS is the process's resident set and its peak (VmRSS, VmHWM), in KiB;
// ok is false once it is gone.
func RSS(pid int) (rss, hwm int64, ok bool) {
	st, ok := status(pid)
	return st["VmRSS:"], st["VmHWM:"], ok
}

// RSSSplit is the resident set's anonymous pages (heap, stacks) and its
// file-backed ones (the binary's), in KiB.
func RSSSplit(pid int) (anon, file int64) {
	st, _ := status(pid)
	return st["RssAnon:"], st["RssFile:"]
}

// status reads the numbers of /proc/PID/status by their field ("VmRSS:").
func status(pid int) (map[string]int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, false
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return out, true
}
