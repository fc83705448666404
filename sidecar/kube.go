package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// restConfig is the in-cluster config (the projected token the controller
// mounts into the sidecar only), or a kubeconfig when one is named, for
// running the sidecar outside a Pod.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no in-cluster credential (and no --kubeconfig): %w", err)
	}
	return cfg, nil
}

// podStatus reads and writes the sidecar's own Pod through the pods/status
// subresource, the only write its Role grants. It also serves as the only
// read: the sidecar may not get Pods, but a patch answers with the whole Pod,
// and an empty patch changes nothing (the API server skips the write of an
// unchanged object), so it reads the Pod's conditions and container states.
type podStatus struct {
	client    *kubeClient
	namespace string
	name      string
}

// patch applies a strategic merge patch to the Pod's status and returns the
// Pod as stored after it.
func (p *podStatus) patch(ctx context.Context, body []byte) (*corev1.Pod, error) {
	return p.client.patchPodStatus(ctx, p.namespace, p.name, body)
}

// read returns the Pod without changing it.
func (p *podStatus) read(ctx context.Context) (*corev1.Pod, error) {
	return p.patch(ctx, []byte("{}"))
}

// fieldManager names the sidecar in the Pod's managedFields.
const fieldManager = "turnwatch-sidecar"

// agentTerminated says whether the named container of pod has terminated (or
// the Pod itself is over).
func agentTerminated(pod *corev1.Pod, container string) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Terminated != nil
		}
	}
	return false
}

// agentDoneFunc reads the Pod and says whether the agent container has
// terminated. A Pod that is gone, or a credential that is refused, for
// longer than grace on clk, ends the follow (the error); other errors are
// taken as "still running" and retried by the caller's next look.
func agentDoneFunc(ps *podStatus, container string, grace time.Duration, clk clock.PassiveClock, log logr.Logger) func(context.Context) (bool, error) {
	refusal := refusals{grace: grace}
	return func(ctx context.Context) (bool, error) {
		pod, err := ps.read(ctx)
		if refusal.final(err, clk.Now()) {
			return false, fmt.Errorf("reading the own Pod: %w", err)
		}
		if err != nil {
			log.Info("reading the own Pod failed; will retry", "err", err.Error())
			return false, nil
		}
		return agentTerminated(pod, container), nil
	}
}

// permanent says whether retrying a request cannot help.
func permanent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) ||
		apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsGone(err)
}

// backoff is an exponential backoff: initial, doubled each time, capped.
type backoff struct {
	initial, max time.Duration
	// refusalGrace is how long refusals (403, 401, 404) must follow one
	// another before they count as final (see refusals).
	refusalGrace time.Duration
}

var defaultBackoff = backoff{initial: 200 * time.Millisecond, max: 5 * time.Second, refusalGrace: 30 * time.Second}

// refused says whether err is a refusal or a not-found: final when it lasts,
// but a kube-apiserver that has just restarted answers so for some seconds
// while its authorizer's caches fill ("clusterrole ... not found").
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
}

// refusals tells a lasting refusal from a passing one.
type refusals struct {
	grace time.Duration
	since time.Time // the first of the refusals in a row; zero when none
}

// lasting records the outcome err of a request made at now. It is true once
// refusals have followed one another for grace; any other outcome starts
// over.
func (r *refusals) lasting(err error, now time.Time) bool {
	if !refused(err) {
		r.since = time.Time{}
		return false
	}
	if r.since.IsZero() {
		r.since = now
	}
	return now.Sub(r.since) >= r.grace
}

// final says whether err ends the retries: a permanent error, unless it is
// a refusal that has not lasted yet.
func (r *refusals) final(err error, now time.Time) bool {
	lasting := r.lasting(err, now)
	return permanent(err) && (lasting || !refused(err))
}

func (b backoff) first() time.Duration { return b.initial }

func (b backoff) next(d time.Duration) time.Duration {
	return min(2*d, b.max)
}

// sleepCtx waits d, or less if ctx ends first (then false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
