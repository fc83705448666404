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

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var operator struct {
	once sync.Once
	err  error
	cmd  *exec.Cmd
	log  string
	// kubeconfig is the manager's own identity (managerKubeconfig).
	kubeconfig string
}

// needOperator installs the CRDs and the sidecar's RBAC and starts the
// manager as a host process against the node, once per run. A test that
// needs the operator fails (it does not skip) when any of that is missing.
func needOperator(t testing.TB) {
	t.Helper()
	if installMode() {
		t.Fatalf("%s is set: the operator runs in the cluster (install tests), so the local manager must not start", installModeEnv)
	}
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
	// The policies' CRDs too: the limits admission policies take them as parameters.
	for _, crd := range []string{"agentruns.turnwatch.dev", "agentturns.turnwatch.dev", "turnpolicies.turnwatch.dev", "clusterturnpolicies.turnwatch.dev"} {
		// Poll rather than `kubectl wait`, which fails while the CRD has no conditions yet.
		err := waitFor(context.Background(), time.Minute, crd+" Established", func() (bool, error) {
			out, err := kubectl("get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			return err == nil && strings.TrimSpace(out) == "True", nil
		})
		if err != nil {
			return err
		}
	}
	if err := installSidecarPolicy(); err != nil {
		return err
	}
	kc, err := managerKubeconfig()
	if err != nil {
		return err
	}
	env.obs.startTurnwatch(context.Background(), env.ns)
	operator.kubeconfig = kc
	return launchManager()
}

// launchManager starts the manager process (its log appended to
// bin/e2e/manager.log) and gives it a moment to fail on bad flags.
func launchManager() error {
	config, err := writeManagerConfig()
	if err != nil {
		return err
	}
	args := []string{"--sidecar-image=" + sidecarImage, "--config=" + config}
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
	logFile, err := os.OpenFile(operator.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(env.artifacts, "manager"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+operator.kubeconfig)
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
		if operator.cmd == cmd { // not stopped by stopManager
			logf("the manager exited: %v (log in %s)", err, operator.log)
		}
	}()
	return nil
}

// restartManager stops the manager and, once then has run, starts it
// again: what the cluster does while turnwatch is down.
func restartManager(t *testing.T, then func()) {
	t.Helper()
	needOperator(t)
	stopManager()
	then()
	if err := launchManager(); err != nil {
		t.Fatalf("the manager could not start again: %v", err)
	}
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

// installSidecarPolicy applies config/sidecar: the sidecar's ClusterRole
// and the admission policies, all cluster-scoped. The namespaced
// ServiceAccount and RoleBinding are the manager's to create.
func installSidecarPolicy() error {
	for _, name := range []string{"clusterrole.yaml", "validatingadmissionpolicy.yaml", "validatingadmissionpolicy_limits.yaml", "mutatingadmissionpolicy_attach.yaml"} {
		f := filepath.Join(env.root, "config", "sidecar", name)
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("no %s to install: %w", f, err)
		}
		if _, err := kubectl("apply", "--server-side", "--force-conflicts", "-f", f); err != nil {
			return err
		}
	}
	return nil
}

// managerKubeconfig gives the manager its own identity: a ServiceAccount
// bound to the generated ClusterRole (config/rbac/role.yaml), so the run
// proves that role is enough. TURNWATCH_E2E_MANAGER_ADMIN=1 uses the admin
// kubeconfig instead.
func managerKubeconfig() (string, error) {
	if os.Getenv("TURNWATCH_E2E_MANAGER_ADMIN") != "" {
		return env.kubeconfig, nil
	}
	role := filepath.Join(env.root, "config", "rbac", "role.yaml")
	if _, err := os.Stat(role); err != nil {
		return "", fmt.Errorf("no manager role (%s): make manifests", role)
	}
	const ns, sa = "turnwatch-system", "turnwatch-manager"
	steps := [][]string{
		{"apply", "-f", role},
		{"create", "namespace", ns},
		{"-n", ns, "create", "serviceaccount", sa},
		{"create", "clusterrolebinding", "turnwatch-manager-e2e", "--clusterrole=turnwatch-manager", "--serviceaccount=" + ns + ":" + sa},
	}
	for _, args := range steps {
		if out, err := kubectl(args...); err != nil && !strings.Contains(out, "AlreadyExists") && !strings.Contains(out, "already exists") {
			return "", err
		}
	}
	token, err := kubectl("-n", ns, "create", "token", sa, "--duration=4h")
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ctx := range cfg.Contexts {
		cfg.AuthInfos[ctx.AuthInfo] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(token)}
	}
	path := filepath.Join(env.artifacts, "manager.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
