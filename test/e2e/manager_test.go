//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var operator struct {
	once sync.Once
	err  error
	cmd  *exec.Cmd
	log  string
}

// needOperator installs the CRDs and the sidecar's RBAC and starts the
// manager as a host process against the node, once per run. A test that
// needs the operator fails (it does not skip) when any of that is missing.
func needOperator(t *testing.T) {
	t.Helper()
	operator.once.Do(func() { operator.err = startOperator() })
	if operator.err != nil {
		t.Fatalf("the operator could not start: %v", operator.err)
	}
}

func startOperator() error {
	crds := filepath.Join(env.root, "config", "crd", "bases")
	if m, _ := filepath.Glob(filepath.Join(crds, "*.yaml")); len(m) == 0 {
		return fmt.Errorf("no CRDs in %s (make manifests)", crds)
	}
	if _, err := kubectl("apply", "--server-side", "-f", crds); err != nil {
		return err
	}
	for _, crd := range []string{"agentruns.turnwatch.dev", "agentturns.turnwatch.dev"} {
		if _, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd); err != nil {
			return err
		}
	}
	if err := installSidecarRBAC(); err != nil {
		return err
	}
	env.obs.startTurnwatch(context.Background(), env.ns)

	args := []string{"--sidecar-image=" + sidecarImage}
	help, _ := exec.Command(filepath.Join(env.artifacts, "manager"), "--help").CombinedOutput()
	// Keep the manager's listeners on loopback and off fixed ports when it has the flags.
	for flag, value := range map[string]string{
		"metrics-bind-address":      "0",
		"health-probe-bind-address": "127.0.0.1:0",
		"leader-elect":              "false",
	} {
		if strings.Contains(string(help), "-"+flag) {
			args = append(args, "--"+flag+"="+value)
		}
	}
	args = append(args, strings.Fields(os.Getenv("TURNWATCH_E2E_MANAGER_ARGS"))...)
	operator.log = filepath.Join(env.artifacts, "manager.log")
	logFile, err := os.Create(operator.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(env.artifacts, "manager"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	operator.cmd = cmd
	logf("manager started (pid %d, %s), log in %s", cmd.Process.Pid, strings.Join(args, " "), operator.log)
	// Give it a moment to fail on bad flags before the tests pile up.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		out, _ := os.ReadFile(operator.log)
		return fmt.Errorf("the manager exited at once (%v):\n%s", err, tail(string(out), 30))
	case <-time.After(3 * time.Second):
	}
	go func() {
		err := <-done
		if operator.cmd != nil {
			logf("the manager exited: %v (log in %s)", err, operator.log)
		}
	}()
	return nil
}

func stopManager() {
	cmd := operator.cmd
	operator.cmd = nil
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(2 * time.Second)
	_ = cmd.Process.Kill()
}

// installSidecarRBAC applies the sidecar's ServiceAccount, Role and binding
// (and the admission policy) from config/rbac into the test namespace.
func installSidecarRBAC() error {
	dir := filepath.Join(env.root, "config", "rbac")
	files, _ := filepath.Glob(filepath.Join(dir, "sidecar*.yaml"))
	if len(files) == 0 {
		return fmt.Errorf("no sidecar RBAC (config/rbac/sidecar*.yaml) to install")
	}
	for _, f := range files {
		if _, err := kubectl("apply", "-n", env.ns, "-f", f); err != nil {
			return err
		}
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
