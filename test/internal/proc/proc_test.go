package proc

import (
	"os"
	"testing"
	"time"
)

var sink int

// The test process reads itself: it has spent CPU and holds memory; a pid
// that does not exist reads as gone.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	// A fresh process may not have spent one clock tick yet: spend some.
	for deadline := time.Now().Add(5 * time.Second); CPU(pid) == 0 && time.Now().Before(deadline); {
		for i := 0; i < 1e6; i++ {
			sink += i
		}
	}
	if c := CPU(pid); c <= 0 {
		t.Errorf("CPU(self) = %v, want > 0", c)
	}
	rss, hwm, ok := RSS(pid)
	if !ok || rss <= 0 || hwm < rss {
		t.Errorf("RSS(self) = %d, %d, %v", rss, hwm, ok)
	}
	if c := CPU(1 << 30); c != -1 {
		t.Errorf("CPU(none) = %v, want -1", c)
	}
	if _, _, ok := RSS(1 << 30); ok {
		t.Error("RSS(none) ok")
	}
}
