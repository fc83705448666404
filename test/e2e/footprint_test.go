//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/test/internal/proc"
)

// TestSidecarFootprint measures the sidecar under load on the real node:
// the fake agent writes a healthy pi stream at 100 events a second
// (fakeagent --rate) for 30 s, or as long as TURNWATCH_FOOTPRINT_FOR says
// (5m for the figures), and the test
// samples the sidecar process from /proc every 2 s: its resident set (now
// and peak) and its CPU time. It reports; it does not assert. The figures
// and the sidecar's default requests and limits are in docs/performance.md.
//
//	flock /tmp/turnwatch-node.lock env TURNWATCH_E2E_KEEP_NODE=1 TURNWATCH_FOOTPRINT_FOR=5m go test -tags e2e ./test/e2e/ -count=1 -v -timeout 30m -run TestSidecarFootprint
func TestSidecarFootprint(t *testing.T) {
	needOperator(t)
	// The suite runs it for 30 s, end to end; the measurement in
	// docs/performance.md sets TURNWATCH_FOOTPRINT_FOR=5m.
	d := 30 * time.Second
	if s := os.Getenv("TURNWATCH_FOOTPRINT_FOR"); s != "" {
		d, _ = time.ParseDuration(s)
	}
	const rate = 100
	none := int64(0)
	createRun(t, "footprint", runSpec{scenario: "healthy", format: "pi", speed: 1, rerolls: &none,
		guards:    map[string]any{"stepBudget": 0},
		extraArgs: []string{"--rate", strconv.Itoa(rate), "--for", d.String()}})
	pod := "footprint-0"
	var pid int
	err := waitFor(t.Context(), 3*time.Minute, "the sidecar of "+pod+" to run", func() (bool, error) {
		pid = sidecarPID(pod)
		return pid > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cpu0, at0 := proc.CPU(pid), time.Now()
	var rss []int64
	var peak int64
	// The CPU counts up to the last sample the sidecar was there for: the
	// agent started before the sampling did, so it ends (and the kubelet
	// stops the sidecar) up to a few seconds before d is over.
	cpu, wall := time.Duration(-1), time.Duration(0)
	for time.Since(at0) < d {
		time.Sleep(2 * time.Second)
		c, at := proc.CPU(pid), time.Since(at0)
		r, hwm, ok := proc.RSS(pid)
		if !ok || c < 0 {
			break // the sidecar ended with the agent
		}
		cpu, wall = c-cpu0, at
		rss = append(rss, r)
		peak = max(peak, hwm)
	}
	if len(rss) < 2 || cpu < 0 {
		t.Fatalf("the sidecar (pid %d) ended after %s", pid, wall)
	}
	p, _ := podOf(pod)
	mean := int64(0)
	for _, r := range rss {
		mean += r
	}
	mean /= int64(len(rss))
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	t.Logf("sidecar pid %d over %s at %d events/s: RSS mean %.1f MiB, last %.1f MiB, peak %.1f MiB; CPU %.2f s = %.2f%% of a core; last progress on the Pod: %s",
		pid, wall.Round(time.Second), rate, mib(mean), mib(rss[len(rss)-1]), mib(peak), cpu.Seconds(), 100*cpu.Seconds()/wall.Seconds(), lastProgress(p))
	env.report.note("Sidecar footprint: %d events/s for %s: RSS mean %.1f MiB, peak %.1f MiB; CPU %.2f%% of a core.",
		rate, wall.Round(time.Second), mib(mean), mib(peak), 100*cpu.Seconds()/wall.Seconds())
}

// sidecarPID finds the sidecar process of pod among the node's processes
// (the node is this machine): `turnwatch-sidecar run` with the pod's name
// in its environment.
func sidecarPID(pod string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	want := []byte(protocol.EnvPodName + "=" + pod + "\x00")
	for _, dir := range dirs {
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte("turnwatch-sidecar\x00run")) {
			continue
		}
		envb, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(envb, want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		return pid
	}
	return 0
}

// lastProgress is what the sidecar last reported: on its run's status
// (status.progress), or on its Pod when it reported there.
func lastProgress(p *corev1.Pod) string {
	if p == nil {
		return "no pod"
	}
	if c, ok := podCondition(p, protocol.ConditionProgress); ok {
		return c.Message
	}
	if r, ok := getRun(p.Labels["turnwatch.dev/run"]); ok {
		if pr, ok, _ := unstructured.NestedMap(r.Object, "status", "progress"); ok {
			return fmt.Sprint(pr)
		}
	}
	return "none"
}
