//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// TestLeastPrivilege takes the credential the kubelet really mounted into a
// running sidecar (a token bound to its Pod) and proves what it can do: patch
// its own Pod's status, and nothing else; and that the agent container got
// no credential at all.
func TestLeastPrivilege(t *testing.T) {
	needOperator(t)
	t.Parallel()
	spec := runSpec{scenario: "silentRun", format: "pi", speed: 0.5}
	createRun(t, "privilege-a", spec)
	createRun(t, "privilege-b", spec)
	own, neighbour := waitPodOfRun(t, "privilege-a"), waitPodOfRun(t, "privilege-b")
	p, _ := podOf(own)

	// The agent container holds no credential.
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		t.Errorf("Pod %s automounts a service-account token", own)
	}
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/var/run/secrets") {
				t.Errorf("container %s mounts %s (%s): the agent must hold no credential", c.Name, m.Name, m.MountPath)
			}
		}
		for _, e := range c.Env {
			if strings.Contains(strings.ToUpper(e.Name), "TOKEN") {
				t.Errorf("container %s has env %s", c.Name, e.Name)
			}
		}
	}

	token, err := sidecarToken(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.cfg)
	cfg.BearerToken = token
	as := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	probe := []byte(`{"status":{"conditions":[{"type":"e2e.turnwatch.dev/Probe","status":"True","reason":"Probe","message":"least-privilege test"}]}}`)

	if _, err := as.CoreV1().Pods(env.ns).Patch(ctx, own, types.StrategicMergePatchType, probe, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("the sidecar's token cannot patch its own Pod's status: %v", err)
	}
	_, err = as.CoreV1().Pods(env.ns).Patch(ctx, neighbour, types.StrategicMergePatchType, probe, metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the sidecar's token patched the neighbouring Pod %s's status (err %v); want it refused", neighbour, err)
	} else {
		t.Logf("neighbour refused: %v", err)
	}
	if _, err := as.CoreV1().Pods(env.ns).Get(ctx, own, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the sidecar's token can get Pods (err %v); it needs no read of Pod objects", err)
	}
	if _, err := as.CoreV1().Secrets(env.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the sidecar's token can list Secrets (err %v)", err)
	}
	if _, err := as.CoreV1().Pods(env.ns).Patch(ctx, neighbour, types.StrategicMergePatchType,
		[]byte(`{"metadata":{"labels":{"e2e":"x"}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the sidecar's token can patch Pod objects (err %v)", err)
	}
	patchRun := func(run, body string) error {
		return as.RESTClient().Patch(types.MergePatchType).AbsPath("/apis/turnwatch.dev/v1alpha1/namespaces", env.ns, "agentruns", run, "status").
			Body([]byte(body)).Do(ctx).Error()
	}
	// Its run's status takes the token's progress report (here an empty
	// one), another run's does not, nor any field but the progress ones.
	if err := patchRun("privilege-a", `{}`); err != nil {
		t.Errorf("the sidecar's token cannot patch its own run's status: %v", err)
	}
	if err := patchRun("privilege-b", `{"status":{"steps":1000,"progress":{"turn":"`+neighbour+`","steps":1000}}}`); !apierrors.IsForbidden(err) {
		t.Errorf("the sidecar's token wrote the neighbouring run's progress (err %v); want it refused", err)
	} else {
		t.Logf("neighbour's run refused: %v", err)
	}
	if err := patchRun("privilege-a", `{"status":{"phase":"Succeeded"}}`); !apierrors.IsForbidden(err) {
		t.Errorf("the sidecar's token wrote its run's phase (err %v); want it refused", err)
	}
	// The real sidecar reports its progress straight into its run's status
	// (status.progress is written by the sidecar alone; its first report goes
	// out a period after it started: e2eStatusFreshness less 5 s).
	if err := waitFor(ctx, 2*time.Minute, "privilege-a's sidecar to report progress on its run", func() (bool, error) {
		r, ok := getRun("privilege-a")
		return ok && str(r, "status", "progress", "turn") == own, nil
	}); err != nil {
		t.Error(err)
	} else if r, ok := getRun("privilege-a"); ok {
		t.Logf("privilege-a (%s) shows %d steps, %s USD; progress %v", str(r, "status", "phase"),
			num(r, "status", "steps"), str(r, "status", "costUSD"), r.Object["status"].(map[string]any)["progress"])
	}
	for _, name := range []string{"privilege-a", "privilege-b"} {
		waitRun(t, name, 4*time.Minute)
	}
}

// sidecarToken reads, on this host, the token the kubelet projected into the
// Pod's sidecar container.
func sidecarToken(p *corev1.Pod) (string, error) {
	vol := ""
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name != protocol.SidecarContainerName {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" {
				vol = m.Name
			}
		}
	}
	if vol == "" {
		return "", errorf("Pod %s: the sidecar mounts no service-account volume", p.Name)
	}
	path := filepath.Join(nodeDir(), "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~projected", vol, "token")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", errorf("reading the sidecar's token on the host: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}
