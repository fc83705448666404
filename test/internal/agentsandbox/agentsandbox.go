// Package agentsandbox runs the real agent-sandbox controller
// (sigs.k8s.io/agent-sandbox, the project of the Sandbox kind) as a local
// process against an API server, the way test/e2e runs turnwatch's manager:
// for test/e2e's TestAttachSandbox on the node, and for this package's own
// proof on envtest (agentsandbox_test.go). hack/agent-sandbox.sh builds it,
// at the version pinned there, from the Go module proxy.
//
// The controller needs no webhook and no certificate: its only inputs are
// its CRDs and a kubeconfig. Without --extensions it reconciles Sandboxes
// only (no SandboxClaim, SandboxTemplate or SandboxWarmPool).
package agentsandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Script builds the controller and prints the folder holding it.
const Script = "hack/agent-sandbox.sh"

// Binary is the controller's file in that folder; its CRDs are in crds/.
const Binary = "agent-sandbox-controller"

// SandboxCRD is the Sandbox's CustomResourceDefinition.
const SandboxCRD = "sandboxes.agents.x-k8s.io"

// SandboxGVR is the Sandbox's resource. Its Pod has the Sandbox's name, is
// controlled by it, and is made from spec.podTemplate (labels and
// annotations of its metadata, and its spec).
var SandboxGVR = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}

// Build runs the script of the repository at root and returns the folder
// it printed on its last line.
func Build(root string) (string, error) {
	cmd := exec.Command(filepath.Join(root, Script))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", Script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// Args are the controller's flags as a local process: its API server from
// kubeconfig, alone (no leader election, whose Lease would outlive a test),
// and no listener (metrics and health probes off), so that it takes no port.
func Args(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}
}

// InstallCRDs applies the CRDs of the folder dir (Build's) with kubectl and
// waits until the Sandbox's is Established.
func InstallCRDs(ctx context.Context, kubectl, kubeconfig, dir string) error {
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := run("apply", "--server-side", "-f", filepath.Join(dir, "crds")); err != nil {
		return err
	}
	// Poll rather than `kubectl wait`, which fails while the CRD has no conditions yet.
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := run("get", "crd", SandboxCRD, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err == nil && strings.TrimSpace(out) == "True" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not Established after a minute (%v)", SandboxCRD, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Controller is the controller's running process.
type Controller struct {
	Log  string // its output
	cmd  *exec.Cmd
	done chan error
}

// Start starts the controller of the folder dir against kubeconfig, its
// output in the file log. It fails when the controller exits within its
// first seconds (a bad flag, an unreachable API server).
func Start(dir, kubeconfig, log string) (*Controller, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(filepath.Join(dir, Binary), Args(kubeconfig)...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a ^C of the tests reaches the test binary,
	// which stops it, not the controller half-way.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Controller{Log: log, cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	select {
	case err := <-c.done:
		out, _ := os.ReadFile(log)
		return nil, fmt.Errorf("%s exited at once (%v):\n%s", Binary, err, out)
	case <-time.After(3 * time.Second):
	}
	return c, nil
}

// Pid is the controller's process id.
func (c *Controller) Pid() int { return c.cmd.Process.Pid }

// Stop asks the controller to stop (SIGTERM), and kills it when it has not
// within 5 s.
func (c *Controller) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// Sandbox is a Sandbox named name in ns whose Pod is made from tmpl.
func Sandbox(ns, name string, tmpl corev1.PodTemplateSpec) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl.Spec)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if len(tmpl.Labels) > 0 {
		meta["labels"] = stringMap(tmpl.Labels)
	}
	if len(tmpl.Annotations) > 0 {
		meta["annotations"] = stringMap(tmpl.Annotations)
	}
	sb := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"podTemplate": map[string]any{"metadata": meta, "spec": spec}},
	}}
	sb.SetGroupVersionKind(SandboxGVR.GroupVersion().WithKind("Sandbox"))
	sb.SetNamespace(ns)
	sb.SetName(name)
	return sb, nil
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Conditions renders a Sandbox's status conditions, one a line
// (TYPE=STATUS REASON: MESSAGE), for a test's log.
func Conditions(sb *unstructured.Unstructured) string {
	var b strings.Builder
	for _, c := range conditions(sb) {
		fmt.Fprintf(&b, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// Condition is a Sandbox's condition of type typ; ok is false when it has none.
func Condition(sb *unstructured.Unstructured, typ string) (c metav1.Condition, ok bool) {
	for _, c := range conditions(sb) {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func conditions(sb *unstructured.Unstructured) []metav1.Condition {
	if sb == nil {
		return nil
	}
	var out struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	status, _, _ := unstructured.NestedMap(sb.Object, "status")
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(status, &out)
	return out.Conditions
}
