//go:build realcli

// Package realcli runs the five real agent CLIs (hack/clis.tsv, installed by
// hack/clis.sh) against the scripted model, through the real sidecar binary
// (turnwatch-sidecar watch, then replay of what it passed through), and
// asserts the verdicts, what the model was told, and that no CLI tried to
// reach anything but the scripted model.
//
// The whole test process runs in a network namespace of its own (TestMain
// re-executes itself under `unshare -n`) in which every IPv4 address is
// local: a CLI that calls home reaches the sinks of sinks_test.go (DNS and
// HTTP(S)), which record it, instead of the world.
package realcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// Set by TestMain for the tests.
var (
	clisDir    string // hack/clis.sh's folder of CLI commands
	sidecarBin string // the sidecar binary built from this tree
	calls      *sinks // what tried to leave the scripted model's loopback
)

const sealedEnv = "TURNWATCH_REALCLI_SEALED"

func TestMain(m *testing.M) {
	clisDir = os.Getenv("TURNWATCH_CLIS")
	if clisDir == "" {
		fmt.Fprintln(os.Stderr, "realcli: TURNWATCH_CLIS must name hack/clis.sh's folder (make test-cli sets it)")
		os.Exit(1)
	}
	if os.Getenv(sealedEnv) == "" {
		os.Exit(reexecSealed())
	}
	sidecarBin = os.Getenv("TURNWATCH_REALCLI_SIDECAR")
	if err := mountHook(os.Getenv("TURNWATCH_REALCLI_HOOK")); err != nil {
		fmt.Fprintln(os.Stderr, "realcli:", err)
		os.Exit(1)
	}
	if err := sealLoopback(); err != nil {
		fmt.Fprintln(os.Stderr, "realcli:", err)
		os.Exit(1)
	}
	var err error
	if calls, err = startSinks(); err != nil {
		fmt.Fprintln(os.Stderr, "realcli: sinks:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// reexecSealed builds the sidecar (the module proxy is reachable out here,
// not in the namespace) and runs this test binary again in a network
// namespace of its own.
func reexecSealed() int {
	dir, err := os.MkdirTemp("", "turnwatch-realcli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realcli:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "turnwatch-sidecar")
	hook := filepath.Join(dir, "turnwatch-hook")
	for out, pkg := range map[string]string{bin: "turnwatch.dev/turnwatch/cmd/turnwatch-sidecar", hook: "turnwatch.dev/turnwatch/cmd/turnwatch-hook"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "realcli: building", pkg+":", err)
			return 1
		}
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realcli: unshare (util-linux) is needed to seal the CLIs off:", err)
		return 1
	}
	// A mount namespace too: the samples' hooks live at /run/turnwatch, as
	// in a Pod, on a tmpfs only this process tree sees.
	cmd := exec.Command(unshare, append([]string{"--net", "--mount", "--"}, os.Args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), sealedEnv+"=1", "TURNWATCH_REALCLI_SIDECAR="+bin, "TURNWATCH_REALCLI_HOOK="+hook)
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Exited() {
				return ws.ExitStatus()
			}
		}
		fmt.Fprintln(os.Stderr, "realcli: unshare --net:", err)
		return 1
	}
	return 0
}

// sealLoopback brings the namespace's loopback up and makes every IPv4
// address local to it, so that a call home lands on a sink.
func sealLoopback() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"route", "add", "local", "default", "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// mountHook puts turnwatch-hook at /run/turnwatch/bin, where the sidecar
// puts it in a Pod, on a tmpfs of this mount namespace.
func mountHook(hook string) error {
	if err := os.MkdirAll("/run/turnwatch", 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "turnwatch", "/run/turnwatch").CombinedOutput(); err != nil {
		return fmt.Errorf("mount tmpfs /run/turnwatch: %v: %s", err, out)
	}
	return nudgefile.InstallHook(nudgefile.Dir, hook) // the hook and the adapters, as the sidecar writes them
}
