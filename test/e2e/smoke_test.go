//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFakeAgentPod proves the layers under the operator: the node runs a
// plain Pod from our own image, and `kubectl logs --timestamps` of it shows
// the scenario's stream, line for line, with its timing.
func TestFakeAgentPod(t *testing.T) {
	ctx := context.Background()
	const speed = 4
	start := time.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-fakeagent", Namespace: env.ns},
		Spec: corev1.PodSpec{
			HostNetwork:                  true,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(false),
			Containers: []corev1.Container{{
				Name:            "agent",
				Image:           fakeAgentImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{"--scenario", "healthy", "--format", "codex", "--speed", "4"},
			}},
		},
	}
	if _, err := env.kube.CoreV1().Pods(env.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running time.Time
	err := waitFor(ctx, 2*time.Minute, "the fake agent Pod to succeed", func() (bool, error) {
		p, ok := podOf(pod.Name)
		if !ok {
			return false, nil
		}
		if running.IsZero() && p.Status.Phase == corev1.PodRunning {
			running = time.Now()
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, errorf("the Pod failed: %s", describe("pod", pod.Name))
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !running.IsZero() {
		env.report.add("apply to a running Pod", running.Sub(start))
	}

	logs, err := env.kube.CoreV1().Pods(env.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "agent", Timestamps: true}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(env.root, "test/fakeagent/scenarios/codex/healthy.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := timestamped(string(logs))
	exp := timestamped(string(want))
	if len(got) != len(exp) {
		t.Fatalf("the log has %d lines, the scenario %d:\n%s", len(got), len(exp), logs)
	}
	for i := range exp {
		if got[i].text != exp[i].text {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i].text, exp[i].text)
		}
	}
	// The gaps survive the replay and the log: the whole stream takes its
	// length divided by the speed (give or take scheduling).
	wantSpan := exp[len(exp)-1].at.Sub(exp[0].at) / speed
	gotSpan := got[len(got)-1].at.Sub(got[0].at)
	if gotSpan < wantSpan*9/10 || gotSpan > wantSpan+2*time.Second {
		t.Errorf("the stream took %v in the log, want about %v", gotSpan, wantSpan)
	}
	t.Logf("%d lines over %v (scenario %v at speed %d)", len(got), gotSpan, wantSpan*speed, speed)
}

type stamped struct {
	at   time.Time
	text string
}

// timestamped splits `kubectl logs --timestamps` output into times and lines.
func timestamped(s string) []stamped {
	var out []stamped
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		ts, rest, ok := strings.Cut(sc.Text(), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil {
			out = append(out, stamped{text: sc.Text()})
			continue
		}
		out = append(out, stamped{at, rest})
	}
	return out
}
