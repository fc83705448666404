//go:build sandbox

// The proof of the harness on envtest's API server (no kubelet, no
// scheduler): the built controller, started as test/e2e starts it, makes a
// Sandbox's Pod, and what it does once that Pod has failed. A build tag of
// its own, since a cold build of the controller takes minutes:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest.sh | tail -n1)" go test -tags sandbox ./test/internal/agentsandbox/ -count=1 -v

package agentsandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"turnwatch.dev/turnwatch/internal/testenv"
)

type cluster struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	ns   string
}

// start: envtest's API server, the Sandbox CRDs applied with its kubectl,
// the controller running against it; its log is printed when t failed.
func start(t *testing.T) *cluster {
	t.Helper()
	env, cfg := testenv.StartT(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := Build(testenv.Root())
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(os.Getenv(testenv.AssetsEnv), "kubectl")
	if err := InstallCRDs(context.Background(), kubectl, kc, dir); err != nil {
		t.Fatal(err)
	}
	ctrl, err := Start(dir, kc, filepath.Join(t.TempDir(), "agent-sandbox.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctrl.Stop()
		if t.Failed() {
			out, _ := os.ReadFile(ctrl.Log)
			t.Logf("%s's log:\n%s", Binary, out)
		}
	})
	c := &cluster{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), ns: "sandbox"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}
	if _, err := c.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSandboxPod: the controller makes the Sandbox's Pod of its template
// (its labels, its init containers), named after it and controlled by it;
// once the Pod has failed, it marks the Sandbox (Ready False and Finished
// True, both PodFailed) and keeps the failed Pod: no new Pod; a Pod
// deleted is made again, with a new UID.
func TestSandboxPod(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"turnwatch.dev/watch": "pi"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "agent", Image: "agent-pi:0.73.1"}},
		},
	}
	sb, err := Sandbox(c.ns, "agent", tmpl)
	if err != nil {
		t.Fatal(err)
	}
	sb, err = c.dyn.Resource(SandboxGVR).Namespace(c.ns).Create(ctx, sb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := c.waitPod(t, sb.GetName(), "")
	t.Logf("pod %s: labels %v, annotations %v", pod.Name, pod.Labels, pod.Annotations)
	if pod.Labels["turnwatch.dev/watch"] != "pi" {
		t.Errorf("pod %s: labels %v, want the template's turnwatch.dev/watch=pi", pod.Name, pod.Labels)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != sb.GetUID() || ref.Kind != "Sandbox" {
		t.Errorf("pod %s: controller %+v, want Sandbox %s", pod.Name, ref, sb.GetUID())
	}

	c.fail(t, pod)
	sb = c.waitSandbox(t, sb.GetName(), "Finished", "PodFailed")
	if cond, _ := Condition(sb, "Ready"); cond.Status != "False" || cond.Reason != "PodFailed" {
		t.Errorf("sandbox: Ready %s %s, want False PodFailed", cond.Status, cond.Reason)
	}
	t.Logf("the Sandbox once its Pod failed:\n%s", Conditions(sb))
	time.Sleep(3 * time.Second) // a new Pod, if the controller made one, would be there by now
	if got := c.waitPod(t, sb.GetName(), ""); got.UID != pod.UID {
		t.Errorf("pod %s: recreated (UID %s, was %s) while the failed one stood", pod.Name, got.UID, pod.UID)
	}
	if list, _ := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{}); len(list.Items) != 1 {
		t.Errorf("%d Pods, want the failed one only", len(list.Items))
	}

	if err := c.kube.CoreV1().Pods(c.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := c.waitPod(t, sb.GetName(), pod.UID)
	t.Logf("the failed Pod deleted: the controller made %s again (UID %s, was %s)", again.Name, again.UID, pod.UID)
}

// fail ends the Pod as the sidecar's trip does on a node: Failed, with the
// condition turnwatch.dev/Tripped (envtest has no kubelet to do it).
func (c *cluster) fail(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: "turnwatch.dev/Tripped", Status: corev1.ConditionTrue, Reason: "identicalCalls", LastTransitionTime: metav1.Now(),
	})
	if _, err := c.kube.CoreV1().Pods(c.ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPod waits for the Pod name whose UID is not notUID.
func (c *cluster) waitPod(t *testing.T, name string, notUID types.UID) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := testenv.WaitFor(context.Background(), time.Minute, 200*time.Millisecond, "pod "+name, nil, func() (bool, error) {
		p, err := c.kube.CoreV1().Pods(c.ns).Get(context.Background(), name, metav1.GetOptions{})
		pod = p
		return err == nil && p.UID != notUID, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// waitSandbox waits for the Sandbox's condition typ to be True for reason.
func (c *cluster) waitSandbox(t *testing.T, name, typ, reason string) *unstructured.Unstructured {
	t.Helper()
	var sb *unstructured.Unstructured
	err := testenv.WaitFor(context.Background(), time.Minute, 200*time.Millisecond, "sandbox "+typ+" "+reason, nil, func() (bool, error) {
		got, err := c.dyn.Resource(SandboxGVR).Namespace(c.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		sb = got
		cond, ok := Condition(got, typ)
		return ok && cond.Status == metav1.ConditionTrue && cond.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, Conditions(sb))
	}
	return sb
}
