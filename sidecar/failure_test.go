package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// statusServer answers the pods/log endpoint with API errors: the first
// transient ones, then final for every later request.
type statusServer struct {
	transient int
	final     *apierrors.StatusError
	conns     atomic.Int32
}

func (s *statusServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.conns.Add(1))
	st := s.final.ErrStatus
	if n <= s.transient {
		// The agent's container has not started yet: the API server says 400.
		st = apierrors.NewBadRequest(`container "agent" in pod "p" is waiting to start: ContainerCreating`).ErrStatus
	}
	st.APIVersion, st.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// An error that retrying cannot fix ends the sidecar: the Failed condition
// on the own Pod, the reason in the termination message, a non-nil error
// (a non-zero exit). A 400 for a container not started yet is retried.
func TestSidecarFailsLoudly(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		name   string
		final  *apierrors.StatusError
		reason string
	}{
		{"log refused", apierrors.NewForbidden(pods, "p", errors.New(`User "system:serviceaccount:ns:agent" cannot get resource "pods/log"`)), protocol.ReasonLogForbidden},
		{"log not found", apierrors.NewNotFound(pods, "p"), protocol.ReasonLogNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &statusServer{transient: 2, final: tc.final}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			client := mustKubeClient(&rest.Config{Host: hs.URL})
			src := &podLogSource{client: client, namespace: "ns", pod: "p", container: "agent",
				agentDone: func(context.Context) (bool, error) { return false, nil },
				backoff:   backoff{initial: time.Millisecond, max: 2 * time.Millisecond}, log: testLogger(t), clock: clock.RealClock{}}
			p := &syncPatcher{p: &podPatcher{t: t}}
			r := testRunner(t, src, p, clock.RealClock{})
			r.cfg.TerminationLog = filepath.Join(t.TempDir(), "termination-log")

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := r.run(ctx) // returns without SIGTERM: the sidecar exits
			var f *failure
			if !errors.As(err, &f) || f.reason != tc.reason {
				t.Fatalf("run: %v, want a %s failure", err, tc.reason)
			}
			if ctx.Err() != nil {
				t.Fatal("the sidecar waited for SIGTERM instead of ending")
			}
			if n := srv.conns.Load(); n != 3 {
				t.Errorf("%d log requests, want 2 retried 400s and the final error", n)
			}
			got, _ := p.conditions()
			c := got[protocol.ConditionFailed]
			want := "opening the log: " + tc.final.Error()
			if c.Status != "True" || c.Reason != tc.reason || c.Message != want {
				t.Errorf("Failed = %s %s/%q, want True %s/%q", c.Status, c.Reason, c.Message, tc.reason, want)
			}
			b, _ := os.ReadFile(r.cfg.TerminationLog)
			reason, msg, ok := protocol.SidecarFailure(string(b))
			if !ok || reason != tc.reason || msg != want {
				t.Errorf("termination message %q", b)
			}
		})
	}
}

// The own Pod refused: nothing can be written on it, the termination
// message still says why.
func TestSidecarFailsLoudlyPodRefused(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/status"}, "p", errors.New("no RBAC"))
	r := testRunner(t, &scriptedSource{}, refusingPatcher{refused}, clock.RealClock{})
	r.cfg.TerminationLog = filepath.Join(t.TempDir(), "termination-log")
	err := r.run(context.Background())
	var f *failure
	if !errors.As(err, &f) || f.reason != protocol.ReasonPodForbidden {
		t.Fatalf("run: %v", err)
	}
	b, _ := os.ReadFile(r.cfg.TerminationLog)
	if !strings.HasPrefix(string(b), protocol.ReasonPodForbidden+": ") || !strings.Contains(string(b), "no RBAC") {
		t.Errorf("termination message %q", b)
	}
}

type refusingPatcher struct{ err error }

func (p refusingPatcher) patch(context.Context, []byte) (*corev1.Pod, error) { return nil, p.err }

func TestSidecarFailureParse(t *testing.T) {
	for in, want := range map[string]string{
		"LogForbidden: pods \"p\" is forbidden": protocol.ReasonLogForbidden,
		"PodNotFound: x":                        protocol.ReasonPodNotFound,
		"Oops: x":                               "",
		"LogForbidden":                          "",
		"":                                      "",
	} {
		r, _, ok := protocol.SidecarFailure(in)
		if r != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", in, r, ok, want)
		}
	}
}
