package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/internal/testenv"
)

// installPolicy applies config/sidecar (the sidecar's ClusterRole and the
// admission policies) to the envtest API server.
func installPolicy() error {
	return testenv.InstallSidecarPolicy(context.Background(), k8s)
}

// The sidecar's credential is what the controller grants and no more: with
// a token bound to its Pod (as the kubelet projects it), it may patch its own
// Pod's status, and nothing else: not read Pods, not patch another Pod.
func TestSidecarCredential(t *testing.T) {
	needEnv(t)
	t.Parallel()
	if err := installPolicy(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManager(t, ns, managerOpts{})
	create(t, newRun(ns, "own"))
	create(t, newRun(ns, "other"))
	own := waitPod(t, ns, "own-0")
	other := waitPod(t, ns, "other-0")

	// The token the kubelet would project into the sidecar of own-0.
	sidecar, err := client.New(testenv.TokenConfig(restConfig, podToken(t, ns, render.SidecarServiceAccount, own, 600)), client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	patchStatus := func(pod *corev1.Pod) error {
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":"turnwatch.dev/Progress","status":"True","reason":"Running","message":"{\"steps\":1,\"costUSD\":\"0\"}"}]}}`)
		p := &corev1.Pod{}
		p.Namespace, p.Name = pod.Namespace, pod.Name
		return sidecar.Status().Patch(context.Background(), p, client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	}

	eventually(t, "own pod status patched by the sidecar", func() error { return patchStatus(own) })
	eventually(t, "another pod's status refused", func() error {
		err := patchStatus(other)
		if err == nil {
			return errors.New("the sidecar patched another pod's status")
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return err
		}
		// Two policies refuse it; the API server names the first.
		if containsAll(err.Error(), "may only write its own Pod") != nil &&
			containsAll(err.Error(), "is written only by its own sidecar") != nil {
			return fmt.Errorf("refused, but not by a turnwatch policy: %v", err)
		}
		return nil
	})
	if err := sidecar.Get(context.Background(), client.ObjectKeyFromObject(own), &corev1.Pod{}); !apierrors.IsForbidden(err) {
		t.Errorf("get pod with the sidecar token: %v, want Forbidden", err)
	}
	if err := sidecar.Delete(context.Background(), other); !apierrors.IsForbidden(err) {
		t.Errorf("delete pod with the sidecar token: %v, want Forbidden", err)
	}
}
