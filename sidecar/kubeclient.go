package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// kubeClient is all the sidecar asks of the API server: patch its own Pod's
// status and follow its agent's log. It speaks HTTP through client-go's
// transport (TLS, the projected token and its rotation, HTTP/2 health
// checks) but not through the generated clientset: that one registers the
// scheme of every Kubernetes API group at start, which cost the sidecar
// about 9 MiB of resident memory for two calls (docs/performance.md,
// "Sidecar footprint").
type kubeClient struct {
	http *http.Client
	// logs follows logs: HTTP/1.1 on paced connections (pacedconn.go).
	logs *http.Client
	base string // scheme://host/api/v1
}

// newKubeClient builds the client from a rest config; clk paces the log
// stream's reads.
func newKubeClient(cfg *rest.Config, clk clock.Clock) (*kubeClient, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	c := *cfg
	c.APIPath = "/api"
	host, path, err := rest.DefaultServerUrlFor(&c)
	if err != nil {
		return nil, err
	}
	logs, err := rest.HTTPClientFor(logConfig(cfg, logReadPace, clk))
	if err != nil {
		return nil, err
	}
	return &kubeClient{http: hc, logs: logs, base: strings.TrimSuffix(host.String(), "/") + path + "/v1"}, nil
}

// logConfig is cfg for the log stream: HTTP/1.1 (so that the follower reads
// the socket itself, not an HTTP/2 read loop woken by every frame) on a
// connection whose reads are paced. The stream has its own connection; a
// half-open one is found by the stall probe's reopen (run_loop.go), as over
// HTTP/2, and by TCP keep-alive.
func logConfig(cfg *rest.Config, pace time.Duration, clk clock.Clock) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.NextProtos = []string{"http/1.1"}
	c.Dial = pacedDialer(pace, clk)
	return c
}

// mustKubeClient is newKubeClient on the real clock for configs that cannot
// fail (tests).
func mustKubeClient(cfg *rest.Config) *kubeClient {
	c, err := newKubeClient(cfg, clock.RealClock{})
	if err != nil {
		panic(err)
	}
	return c
}

func (c *kubeClient) podURL(namespace, pod, sub string, q url.Values) string {
	u := c.base + "/namespaces/" + url.PathEscape(namespace) + "/pods/" + url.PathEscape(pod) + "/" + sub
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// patchPodStatus applies a strategic merge patch to the Pod's status and
// returns the Pod as stored after it.
func (c *kubeClient) patchPodStatus(ctx context.Context, namespace, pod string, body []byte) (*corev1.Pod, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch,
		c.podURL(namespace, pod, "status", url.Values{"fieldManager": {fieldManager}}), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", string(types.StrategicMergePatchType))
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, apiError(resp.StatusCode, b, "PATCH", pod)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decoding the Pod: %w", err)
	}
	return out, nil
}

// podLog opens the log of one container of the Pod, as
// `kubectl logs` does: the caller reads and closes the stream.
func (c *kubeClient) podLog(ctx context.Context, namespace, pod string, o *corev1.PodLogOptions) (io.ReadCloser, error) {
	q := url.Values{"container": {o.Container}}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	if o.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	if o.SinceTime != nil {
		s, err := o.SinceTime.MarshalQueryParameter()
		if err != nil {
			return nil, err
		}
		q.Set("sinceTime", s)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.podURL(namespace, pod, "log", q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.logs.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, apiError(resp.StatusCode, b, "GET", pod)
	}
	return resp.Body, nil
}

// apiError is the error of a refused request, as client-go makes it: the
// API server's Status when the body is one, else a generic error for the
// HTTP code (so that apierrors.IsForbidden and the like still hold).
func apiError(code int, body []byte, verb, name string) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(code, verb, schema.GroupResource{Resource: "pods"}, name,
		strings.TrimSpace(string(body)), 0, true)
}
