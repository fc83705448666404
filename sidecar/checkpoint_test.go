package sidecar

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// logRunner is a runner on the pods/log source served by h, with its state
// in dir ("" for none).
func logRunner(t *testing.T, h http.Handler, done func(context.Context) (bool, error), p statusPatcher, dir string) *runner {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	client := mustKubeClient(&rest.Config{Host: hs.URL})
	src := &podLogSource{client: client, namespace: "ns", pod: "p", container: "agent", agentDone: done,
		backoff: backoff{initial: time.Millisecond, max: 2 * time.Millisecond}, log: testLogger(t), clock: clock.RealClock{}}
	r := testRunner(t, src, p, clock.RealClock{})
	r.cfg.StateDir, r.checkpointPeriod = dir, 0
	return r
}

// A sidecar killed mid-turn and started again after the kubelet rotated the
// log (the lines before the cut are gone) settles the turn as one
// uninterrupted sidecar does: same summary, same nudge. Without the
// checkpoint it would not.
func TestCheckpointAcrossRotation(t *testing.T) {
	// Stamped just before now, so that no stall is due while the first
	// sidecar waits on its held connection.
	entries := timedLog(silentTurn(14, true), time.Now().Add(-time.Minute).Truncate(time.Second), time.Second)
	const cut = 20 // lines the first sidecar read; the nudge comes later
	exited := func(context.Context) (bool, error) { return true, nil }
	running := func(context.Context) (bool, error) { return false, nil }

	settle := func(r *runner, p *syncPatcher) map[string]corev1.PodCondition {
		runUntil(t, r, p, has(protocol.ConditionFinished))
		c, _ := p.conditions()
		return c
	}
	whole := &syncPatcher{p: &podPatcher{t: t}}
	want := settle(logRunner(t, &fakeLogServer{t: t, entries: entries, exited: true}, exited, whole, t.TempDir()), whole)

	for _, withState := range []bool{true, false} {
		dir := t.TempDir()
		p := &syncPatcher{p: &podPatcher{t: t}}
		first := logRunner(t, &halfOpenLogServer{t: t, entries: entries, send: []int{cut}}, running, p, dir)
		crash, kill := context.WithCancel(context.Background())
		defer kill()
		followCtx, stopFollow := context.WithCancel(crash)
		done := make(chan error, 1)
		go func() {
			if err := first.rep.load(crash); err != nil {
				done <- err
				return
			}
			done <- first.watch(followCtx, stopFollow, crash)
		}()
		waitCheckpoint(t, first, dir, cut)
		kill() // the process dies
		<-done

		if !withState {
			dir = t.TempDir() // a sidecar without its state volume
		}
		rotated := &fakeLogServer{t: t, entries: entries[cut-1:], exited: true} // the lines before are gone
		got := settle(logRunner(t, rotated, exited, p, dir), p)
		same := got[protocol.ConditionFinished].Message == want[protocol.ConditionFinished].Message &&
			got[protocol.ConditionSilent].Message == want[protocol.ConditionSilent].Message
		if same != withState {
			t.Errorf("state %v: Finished %s, Silent %q\nuninterrupted: Finished %s, Silent %q", withState,
				got[protocol.ConditionFinished].Message, got[protocol.ConditionSilent].Message,
				want[protocol.ConditionFinished].Message, want[protocol.ConditionSilent].Message)
		}
	}
}

// waitCheckpoint waits until the checkpoint in dir holds n lines.
func waitCheckpoint(t *testing.T, r *runner, dir string, n int) {
	t.Helper()
	ck := newCheckpointer(dir, 0, clock.RealClock{}, testLogger(t))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cp, err := ck.load(); err == nil && cp != nil {
			eng, _ := monitor.New(r.cfg.engineOptions())
			if eng.Restore(cp.Engine) == nil && eng.Report().Lines == n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no checkpoint of %d lines", n)
}
