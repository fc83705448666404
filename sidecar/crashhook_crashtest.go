//go:build crashtest

package sidecar

import (
	"bytes"
	"os"
	"syscall"
)

// CrashWord, in a line, kills a sidecar built with the crashtest tag as
// the kernel's OOM killer would (SIGKILL), before the line is fed: the
// tests of docs/design.md#bad-input run the real binary on it.
const CrashWord = "TURNWATCH-TEST-CRASH-HERE"

func init() {
	crashHook = func(line []byte) {
		if bytes.Contains(line, []byte(CrashWord)) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
