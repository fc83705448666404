package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

func TestRefusalsLast(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	forbidden := apierrors.NewForbidden(pods, "p", errors.New(`clusterrole "turnwatch-sidecar" not found`))
	invalid := apierrors.NewBadRequest("bad patch")
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		err   error
		at    time.Duration
		final bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a refusal within the grace is retried", []step{{forbidden, 0, false}, {forbidden, 29 * time.Second, false}}},
		{"a refusal that lasts the grace is final", []step{{forbidden, 0, false}, {forbidden, 30 * time.Second, true}}},
		{"a success starts over", []step{{forbidden, 0, false}, {nil, 20 * time.Second, false}, {forbidden, 31 * time.Second, false}}},
		{"a not-found lasts like a refusal", []step{{apierrors.NewNotFound(pods, "p"), 0, false}, {apierrors.NewNotFound(pods, "p"), time.Minute, true}}},
		{"any other permanent error is final at once", []step{{invalid, 0, true}}},
		{"a transient error is never final", []step{{errors.New("connection reset"), 0, false}, {errors.New("connection reset"), time.Hour, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := refusals{grace: 30 * time.Second}
			for i, s := range tc.steps {
				if got := r.final(s.err, t0.Add(s.at)); got != s.final {
					t.Errorf("step %d (%v at %v): final %v, want %v", i, s.err, s.at, got, s.final)
				}
			}
		})
	}
}

// A kube-apiserver that has just restarted refuses the sidecar's log
// request while its RBAC caches fill: the sidecar retries, and follows the
// log once the refusals pass.
func TestPassingRefusalIsRetried(t *testing.T) {
	var conns atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conns.Add(1) <= 3 {
			forbid(w)
			return
		}
		fmt.Fprintln(w, `2026-12-01T00:00:00.000000000Z {"type":"agent_start"}`)
	}))
	defer hs.Close()
	src := &podLogSource{client: mustKubeClient(&rest.Config{Host: hs.URL}), namespace: "ns", pod: "p", container: "agent",
		agentDone: func(context.Context) (bool, error) { return true, nil },
		backoff:   backoff{initial: time.Millisecond, max: 2 * time.Millisecond, refusalGrace: time.Hour}, log: testLogger(t), clock: clock.RealClock{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lines int
	err := src.Follow(ctx, func(streamLine) error { lines++; return nil })
	if err != nil || lines != 1 {
		t.Fatalf("Follow: %v after %d lines, want the one line and the end", err, lines)
	}
	if n := conns.Load(); n < 4 {
		t.Errorf("%d requests, want 3 refused and then the log", n)
	}
}

func forbid(w http.ResponseWriter) {
	st := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New(`clusterrole "turnwatch-sidecar" not found`)).ErrStatus
	st.APIVersion, st.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
