package sidecar

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The soft limit is 3/4 of the container's, from cgroup v2 or v1; none when
// the container has none, or GOMEMLIMIT says otherwise.
func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	for _, tt := range []struct {
		name, file, content, env string
		want                     int64
	}{
		{"v2", "memory.max", "134217728\n", "", 100663296},
		{"v1", "memory/memory.limit_in_bytes", "134217728\n", "", 100663296},
		{"v2 without a limit", "memory.max", "max\n", "", 0},
		{"v1 without a limit", "memory/memory.limit_in_bytes", "9223372036854771712\n", "", 0},
		{"no cgroup", "elsewhere", "1", "", 0},
		{"GOMEMLIMIT set", "memory.max", "134217728\n", "64MiB", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, tt.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			debug.SetMemoryLimit(prev)
			got := LimitMemory(root, func(k string) string {
				if k == "GOMEMLIMIT" {
					return tt.env
				}
				return ""
			})
			if got != tt.want {
				t.Errorf("limit %d, want %d", got, tt.want)
			}
			if now := debug.SetMemoryLimit(-1); tt.want > 0 && now != tt.want || tt.want == 0 && now != prev {
				t.Errorf("the runtime's limit is %d", now)
			}
		})
	}
}
