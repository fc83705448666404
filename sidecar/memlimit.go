package sidecar

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The sidecar's memory is bounded by what it holds for one line (the
// engine's 16 MiB cap: the follower's buffer, the line handed to the
// engine, the engine's decoded copy of a line written with ASCII escapes),
// about 64 MiB at worst, plus a few MiB of fixed state. Go's collector
// lets the heap grow to twice what was live at the last collection, and
// keeps freed pages a while, so a run of long lines could still reach the
// container's limit (128Mi by default) in garbage alone. A soft limit under
// the container's makes the collector work harder near it instead
// (docs/performance.md, "The sidecar's memory on hostile input").

// memoryShare is the part of the container's memory limit the Go runtime
// is asked to stay under: the rest is the binary's pages and headroom.
const memoryShare = 0.75

// cgroupLimitFiles are where a container finds its memory limit: cgroup v2,
// then v1, relative to the root of the cgroup file system.
var cgroupLimitFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// LimitMemory sets the Go runtime's soft memory limit to memoryShare of the
// container's memory limit, read under cgroupRoot (/sys/fs/cgroup), and
// returns it; 0 when GOMEMLIMIT is set (the runtime applies it) or the
// container has no limit.
func LimitMemory(cgroupRoot string, getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := containerLimit(cgroupRoot)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// containerLimit is the cgroup's memory limit in bytes; 0 for none
// ("max", or v1's page-rounded MaxInt64).
func containerLimit(root string) int64 {
	for _, f := range cgroupLimitFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}
