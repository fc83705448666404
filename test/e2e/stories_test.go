//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func ptr[T any](v T) *T { return &v }

// tripStory is what a tripped run must show, from the Pod to `kubectl describe`.
type tripStory struct {
	detector string // identicalCalls
	class    string // runaway
	attempts int    // 2 with a reroll, 1 without
}

// TestTrips runs the stories of runs a detector stops: trip -> Pod condition
// -> agent container terminated -> turn Failed -> reroll (where the policy
// allows) -> fault on the AgentRun -> `kubectl describe` text.
func TestTrips(t *testing.T) {
	needOperator(t)
	t.Parallel()
	tests := []struct {
		name  string
		spec  runSpec
		story tripStory
	}{{
		name:  "loop",
		spec:  runSpec{scenario: "identicalLoop", format: "pi", speed: 2},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 2},
	}, {
		name:  "stall",
		spec:  runSpec{scenario: "stall", format: "pi", speed: 100, guards: map[string]any{"stallTimeout": "3s"}},
		story: tripStory{detector: "stall", class: "stalled", attempts: 2},
	}, {
		name:  "whitespace",
		spec:  runSpec{scenario: "whitespace", format: "pi", speed: 1},
		story: tripStory{detector: "degeneration", class: "degenerate", attempts: 2},
	}, {
		name:  "overspend",
		spec:  runSpec{scenario: "overspend", format: "pi", speed: 2, guards: map[string]any{"maxCostUSD": "1.00"}},
		story: tripStory{detector: "spend", class: "overspend", attempts: 1},
	}, {
		name:  "continue",
		spec:  runSpec{scenario: "identicalLoop", format: "pi", speed: 2, session: "e2e-session", cont: true},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 1},
	}, {
		name:  "length",
		spec:  runSpec{scenario: "lengthStop", format: "pi", speed: 2},
		story: tripStory{detector: "lengthStop", class: "length", attempts: 1},
	}, {
		name:  "loop-claude",
		spec:  runSpec{scenario: "identicalLoop", format: "claude", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 1},
	}, {
		name:  "loop-codex",
		spec:  runSpec{scenario: "identicalLoop", format: "codex", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 1},
	}, {
		name:  "loop-opencode",
		spec:  runSpec{scenario: "identicalLoop", format: "opencode", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 1},
	}, {
		name:  "loop-gemini",
		spec:  runSpec{scenario: "identicalLoop", format: "gemini", speed: 2, rerolls: ptr[int64](0)},
		story: tripStory{detector: "identicalCalls", class: "runaway", attempts: 1},
	}, {
		name:  "whitespace-claude",
		spec:  runSpec{scenario: "whitespace", format: "claude", speed: 1, rerolls: ptr[int64](0)},
		story: tripStory{detector: "degeneration", class: "degenerate", attempts: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "trip-" + tt.name
			createRun(t, name, tt.spec)
			waitRun(t, name, 4*time.Minute)
			checkTripStory(t, name, tt.spec, tt.story)
			if tt.story.detector == "stall" {
				measureStall(t, name, 3*time.Second)
			}
		})
	}
}

func checkTripStory(t *testing.T, name string, spec runSpec, want tripStory) {
	t.Helper()
	r, _ := getRun(name)
	if got := str(r, "status", "phase"); got != "Faulted" {
		t.Fatalf("phase %s, want Faulted\n%s", got, debugRun(name))
	}
	turns := turnsOf(name)
	if len(turns) != want.attempts || num(r, "status", "attempts") != int64(want.attempts) {
		t.Fatalf("%d turns (status.attempts %d), want %d: %s\n%s", len(turns), num(r, "status", "attempts"),
			want.attempts, fmtTurns(turns), debugRun(name))
	}
	reason := protocol.ReasonFor(want.detector)
	for _, turn := range turns {
		tn := turn.GetName()
		if got := str(turn, "status", "outcome"); got != "Failed" {
			t.Errorf("turn %s outcome %q, want Failed", tn, got)
		}
		if got := str(turn, "status", "error", "type"); got != want.class {
			t.Errorf("turn %s error.type %q, want %q", tn, got, want.class)
		}
		if got := str(turn, "status", "error", "detector"); got != want.detector {
			t.Errorf("turn %s error.detector %q, want %q", tn, got, want.detector)
		}
		if str(turn, "status", "error", "message") == "" {
			t.Errorf("turn %s has no error message", tn)
		}
		pod, ok := podOfTurn(name, turn)
		if !ok {
			t.Errorf("turn %s: its Pod is gone; the tripped turn's Pod must be kept for inspection", tn)
			continue
		}
		c, ok := podCondition(pod, protocol.ConditionTripped)
		if !ok || c.Status != corev1.ConditionTrue || c.Reason != reason || c.Message == "" {
			t.Errorf("Pod %s condition %s = %+v, want True with reason %s and a message", pod.Name, protocol.ConditionTripped, c, reason)
		}
		// The agent is stopped: its container terminates. The controller asks
		// (activeDeadlineSeconds) and the kubelet acts a few seconds later,
		// so wait for it. A length stop is judged once the agent ended by
		// itself, so its container is terminated either way.
		if err := waitAgentTerminated(pod.Name); err != nil {
			t.Error(err)
		}
		// The story runs in order: the sidecar's condition first, then the turn's outcome.
		cond, _ := env.obs.seen(podCondKey(pod.Name, protocol.ConditionTripped))
		failed, ok := env.obs.seen(turnOutcomeKey(tn, "Failed"))
		if ok && failed.Before(cond) {
			t.Errorf("turn %s was Failed (%v) before its Pod showed the trip (%v)", tn, failed, cond)
		}
	}
	if len(turns) == 2 {
		p0, p1 := str(turns[0], "spec", "prompt"), str(turns[1], "spec", "prompt")
		if p0 != p1 {
			t.Errorf("the reroll's prompt %q differs from the first turn's %q", p1, p0)
		}
		c0, c1 := str(turns[0], "spec", "conversationID"), str(turns[1], "spec", "conversationID")
		if c0 == c1 {
			t.Errorf("the reroll reuses conversation %q; it must start a fresh one", c0)
		}
	}
	// Money adds up: each turn reports its own cost, the run the sum. The
	// fake agent plays the same stream on every attempt and the sidecar
	// counts nothing after a trip, so a reroll costs what the first turn did;
	// a turn that counted the earlier turns' cost as its own would cost more
	// (and the sum alone would not see it: the run adds what the turns say).
	if len(turns) > 1 {
		sum := monitor.Money(0)
		first := str(turns[0], "status", "costUSD")
		for _, turn := range turns {
			m, err := monitor.ParseMoney(str(turn, "status", "costUSD"))
			if err != nil {
				t.Errorf("turn %s costUSD %q: %v", turn.GetName(), str(turn, "status", "costUSD"), err)
			}
			if got := str(turn, "status", "costUSD"); !sameDecimal(got, first) {
				t.Errorf("turn %s costUSD %s, want its own stream's %s (the first turn's): %s", turn.GetName(), got, first, fmtTurns(turns))
			}
			sum = sum.Add(m)
		}
		if got := str(turns[1], "spec", "priorCostUSD"); !sameDecimal(got, first) {
			t.Errorf("turn %s was told the earlier turns cost %q, want %s", turns[1].GetName(), got, first)
		}
		if got := str(r, "status", "costUSD"); !sameDecimal(got, sum.String()) {
			t.Errorf("run costUSD %s, want the sum of its turns' %s: %s", got, sum, fmtTurns(turns))
		}
	}
	if want.attempts == 1 && spec.rerolls == nil {
		if n, _ := runEvents(name, "Rerolled"); n != 0 {
			t.Errorf("%d Rerolled events on a run that must not reroll", n)
		}
	}
	if spec.cont {
		if num(r, "status", "epoch") < 1 {
			t.Errorf("a faulted continue must bump the session's epoch; status.epoch = %d", num(r, "status", "epoch"))
		}
	}
	fault := map[string]string{
		"class":    str(r, "status", "fault", "class"),
		"detector": str(r, "status", "fault", "detector"),
		"message":  str(r, "status", "fault", "message"),
		"turn":     str(r, "status", "fault", "turn"),
	}
	if fault["class"] != want.class || fault["detector"] != want.detector || fault["message"] == "" {
		t.Errorf("status.fault = %v, want class %s detector %s and a message", fault, want.class, want.detector)
	}
	if last := turns[len(turns)-1].GetName(); fault["turn"] != last {
		t.Errorf("status.fault.turn = %q, want the last turn %q", fault["turn"], last)
	}
	// What a user reads.
	text := describe("agentrun", name)
	wants := []string{"Faulted", want.class, fault["message"]}
	if len(turns) == 2 {
		wants = append(wants, "Rerolled")
	}
	if missing, ok := containsAll(text, wants...); !ok {
		t.Errorf("kubectl describe agentrun %s lacks %q:\n%s", name, missing, text)
	}
}

// TestFinishes runs the stories of runs no detector stops.
func TestFinishes(t *testing.T) {
	needOperator(t)
	t.Parallel()
	tests := []struct {
		name     string
		spec     runSpec
		phase    string
		class    string // fault class when Faulted
		steps    int64
		costUSD  string // "" when not checked
		nudged   bool
		finished string // Finished reason
	}{
		{name: "healthy-pi", spec: runSpec{scenario: "healthy", format: "pi", speed: 2}, phase: "Succeeded", steps: 4, costUSD: "0.0435", finished: protocol.ReasonResult},
		{name: "healthy-claude", spec: runSpec{scenario: "healthy", format: "claude", speed: 2}, phase: "Succeeded", steps: 4, finished: protocol.ReasonResult},
		{name: "healthy-codex", spec: runSpec{scenario: "healthy", format: "codex", speed: 2}, phase: "Succeeded", steps: 4, finished: protocol.ReasonResult},
		{name: "healthy-opencode", spec: runSpec{scenario: "healthy", format: "opencode", speed: 2}, phase: "Succeeded", steps: 4, costUSD: "0.0435", finished: protocol.ReasonResult},
		{name: "healthy-gemini", spec: runSpec{scenario: "healthy", format: "gemini", speed: 2}, phase: "Succeeded", steps: 4, finished: protocol.ReasonResult},
		{name: "silent", spec: runSpec{scenario: "silentRun", format: "pi", speed: 2}, phase: "Succeeded", steps: 18, nudged: true, finished: protocol.ReasonResult},
		{name: "noresult", spec: runSpec{scenario: "noresult", format: "pi", speed: 2, rerolls: ptr[int64](0)}, phase: "Faulted", class: "no-signal", steps: 1, finished: protocol.ReasonNoResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "run-" + tt.name
			createRun(t, name, tt.spec)
			waitRun(t, name, 4*time.Minute)
			r, _ := getRun(name)
			if got := str(r, "status", "phase"); got != tt.phase {
				t.Fatalf("phase %s, want %s\n%s", got, tt.phase, debugRun(name))
			}
			if tt.class != "" && str(r, "status", "fault", "class") != tt.class {
				t.Errorf("fault class %q, want %q", str(r, "status", "fault", "class"), tt.class)
			}
			if got := num(r, "status", "steps"); got != tt.steps {
				t.Errorf("status.steps = %d, want %d", got, tt.steps)
			}
			if tt.costUSD != "" && !sameDecimal(str(r, "status", "costUSD"), tt.costUSD) {
				t.Errorf("status.costUSD = %q, want %s", str(r, "status", "costUSD"), tt.costUSD)
			}
			turns := turnsOf(name)
			if len(turns) != 1 {
				t.Fatalf("%d turns, want 1: %s", len(turns), fmtTurns(turns))
			}
			pod, ok := podOfTurn(name, turns[0])
			if !ok {
				t.Fatalf("no Pod for turn %s", turns[0].GetName())
			}
			checkSummary(t, pod, tt.spec, tt.steps, tt.finished)
			n, _ := runEvents(name, "Nudged")
			_, silent := podCondition(pod, protocol.ConditionSilent)
			if tt.nudged && (n != 1 || !silent) {
				t.Errorf("%d Nudged events (Silent condition %v), want exactly 1\n%s", n, silent, describe("agentrun", name))
			}
			if !tt.nudged && (n != 0 || silent) {
				t.Errorf("%d Nudged events (Silent condition %v) on a run that spoke", n, silent)
			}
			if _, tripped := podCondition(pod, protocol.ConditionTripped); tripped {
				t.Errorf("Pod %s has a %s condition on a run no detector stopped", pod.Name, protocol.ConditionTripped)
			}
		})
	}
}

// checkSummary checks the sidecar's Finished summary: every line of the
// stream counted exactly once, none unparsed.
func checkSummary(t *testing.T, pod *corev1.Pod, spec runSpec, steps int64, reason string) {
	t.Helper()
	c, ok := podCondition(pod, protocol.ConditionFinished)
	if !ok || c.Reason != reason {
		t.Errorf("Pod %s condition %s = %+v, want reason %s", pod.Name, protocol.ConditionFinished, c, reason)
		return
	}
	s, ok := summary(pod)
	if !ok {
		t.Errorf("Pod %s: Finished message %q is not a summary", pod.Name, c.Message)
		return
	}
	want := protocol.Summary{Progress: protocol.Progress{Steps: int64(steps)}, Lines: scenarioLines(t, spec.format, spec.scenario), Result: reason == protocol.ReasonResult}
	if s.Steps != want.Steps || s.Lines != want.Lines || s.Unparsed != 0 || s.Result != want.Result {
		t.Errorf("Pod %s summary %+v, want steps %d, lines %d, result %v, nothing unparsed",
			pod.Name, s, want.Steps, want.Lines, want.Result)
	}
}

// waitAgentTerminated waits for the agent container of a Pod to terminate.
func waitAgentTerminated(pod string) error {
	return waitFor(context.Background(), 90*time.Second, "the agent container of "+pod+" to terminate", func() (bool, error) {
		_, ok := env.obs.seen(containerDoneKey(pod, "agent"))
		return ok, nil
	})
}
