//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// TestTripLatency measures, over at least 20 trips, how long a trip takes to
// show: from the kubelet's timestamp of the tripping line to the Tripped
// condition on the Pod, to the AgentTurn's Failed outcome, and to the agent
// container's end. It reports; it does not assert times.
func TestTripLatency(t *testing.T) {
	needOperator(t)
	const runs, parallel = 12, 4 // a loop run trips twice: 24 trips
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	trips := 0
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := fmt.Sprintf("latency-%02d", i)
			createRun(t, name, runSpec{scenario: "identicalLoop", format: "pi", speed: 2})
			waitRun(t, name, 4*time.Minute)
			for _, turn := range turnsOf(name) {
				if measureTrip(t, name, turn.GetName()) {
					mu.Lock()
					trips++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if trips < 20 {
		t.Errorf("measured %d trips, want at least 20", trips)
	}
	env.report.note("Trip latencies: %d trips of the pi loop scenario at speed 2, %d runs at a time, one reroll each.", trips, parallel)
}

// measureTrip records the latencies of one tripped turn.
func measureTrip(t *testing.T, run, turnName string) bool {
	turns := turnsOf(run)
	var pod *corev1.Pod
	for _, tr := range turns {
		if tr.GetName() == turnName {
			pod, _ = podOfTurn(run, tr)
		}
	}
	if pod == nil {
		t.Errorf("turn %s has no Pod", turnName)
		return false
	}
	line, err := tripLineTime(pod.Name, "pi")
	if err != nil {
		t.Errorf("turn %s: %v", turnName, err)
		return false
	}
	if err := waitAgentTerminated(pod.Name); err != nil {
		t.Error(err)
		return false
	}
	cond, ok1 := env.obs.seen(podCondKey(pod.Name, protocol.ConditionTripped))
	failed, ok2 := env.obs.seen(turnOutcomeKey(turnName, "Failed"))
	stopped, ok3 := env.obs.seen(containerDoneKey(pod.Name, "agent"))
	if !ok1 || !ok2 || !ok3 {
		t.Errorf("turn %s: condition seen %v, outcome seen %v, agent terminated seen %v", turnName, ok1, ok2, ok3)
		return false
	}
	env.report.sample("tripping line -> Pod condition", cond.Sub(line))
	env.report.sample("tripping line -> AgentTurn Failed", failed.Sub(line))
	env.report.sample("tripping line -> agent container terminated", stopped.Sub(line))
	return true
}

// tripLineTime finds the line that tripped, by running the real engine
// (`turnwatch-sidecar replay`) over the agent's log, and returns the
// kubelet's timestamp of that line.
func tripLineTime(pod, format string) (time.Time, error) {
	logs, err := env.kube.CoreV1().Pods(env.ns).GetLogs(pod, &corev1.PodLogOptions{Container: "agent", Timestamps: true}).DoRaw(context.Background())
	if err != nil {
		return time.Time{}, err
	}
	cmd := exec.Command(filepath.Join(env.artifacts, "turnwatch-sidecar"), "replay", "--format", format, "-")
	cmd.Stdin = bytes.NewReader(logs)
	out, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("turnwatch-sidecar replay: %v", err)
	}
	var rep struct {
		Trips []struct {
			Line int `json:"line"`
		} `json:"trips"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Trips) == 0 {
		return time.Time{}, fmt.Errorf("replay found no trip in the log (%v): %s", err, strings.TrimSpace(string(out)))
	}
	lines := timestamped(string(logs))
	n := rep.Trips[0].Line
	if n < 1 || n > len(lines) || lines[n-1].at.IsZero() {
		return time.Time{}, fmt.Errorf("replay's trip line %d is not a timestamped log line", n)
	}
	return lines[n-1].at, nil
}

// measureStall reports how long after the agent's last line (the one before
// its silence) the stall trip showed on each of the run's Pods.
func measureStall(t *testing.T, run string, timeout time.Duration) {
	for _, turn := range turnsOf(run) {
		pod, ok := podOfTurn(run, turn)
		if !ok {
			continue
		}
		logs, err := env.kube.CoreV1().Pods(env.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "agent", Timestamps: true}).DoRaw(context.Background())
		if err != nil {
			t.Errorf("logs of %s: %v", pod.Name, err)
			continue
		}
		lines := timestamped(string(logs))
		cond, ok := env.obs.seen(podCondKey(pod.Name, protocol.ConditionTripped))
		if len(lines) == 0 || !ok {
			continue
		}
		last := lines[len(lines)-1].at
		env.report.sample(fmt.Sprintf("stall: last line -> Pod condition (stallTimeout %v)", timeout), cond.Sub(last))
	}
}
