//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// claudeHookSettings is a Claude Code --settings JSON that runs
// turnwatch-hook after every tool call (config/samples/cli_claude.yaml).
const claudeHookSettings = `{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/run/turnwatch/bin/turnwatch-hook --cli claude","timeout":10}]}]}}`

// TestNudgesReachTheAgent runs the fake agent live (`fakeagent react`), with
// Claude Code's hook wiring, against the real sidecar on the real node:
// nudges go through the shared volume and turnwatch-hook into the agent,
// which reacts. It also looks from inside the agent container: no token,
// and nothing but nudges in the nudges file.
func TestNudgesReachTheAgent(t *testing.T) {
	needOperator(t)
	t.Parallel()
	tests := []struct {
		name     string
		react    string
		phase    string
		detector string // the nudge's detector (Silent condition reason)
		heard    string // what the agent says it was told
		tripped  bool
	}{
		{name: "warned-changes-course", react: "changes", phase: "Succeeded", detector: "identicalCalls",
			heard: "I was told: turnwatch warning (identicalCalls"},
		{name: "warned-stubborn-trips", react: "stubborn", phase: "Faulted", detector: "identicalCalls", tripped: true},
		{name: "silent-speaks", react: "silent", phase: "Succeeded", detector: "silentRun",
			heard: "I was told: turnwatch nudge (silentRun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "nudge-" + tt.name
			run := agentRun(name, runSpec{scenario: "react", format: "claude", rerolls: ptr[int64](0),
				guards: map[string]any{"nudgeDelivery": "file", "warnFirst": true}})
			c := run.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["args"] = []any{"react", "--react", tt.react, "--settings", claudeHookSettings, "--every", "1s", "--calls", "30", "--inspect", nudgefile.Dir}
			if _, err := env.dyn.Resource(agentRunGVR).Namespace(env.ns).Create(context.Background(), run, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRun(t, name, 4*time.Minute)
			r, _ := getRun(name)
			if got := str(r, "status", "phase"); got != tt.phase {
				t.Fatalf("phase %s, want %s\n%s", got, tt.phase, debugRun(name))
			}
			turns := turnsOf(name)
			if len(turns) != 1 || num(r, "status", "attempts") != 1 {
				t.Fatalf("%d turns, want 1 (no reroll): %s", len(turns), fmtTurns(turns))
			}
			pod, ok := podOfTurn(name, turns[0])
			if !ok {
				t.Fatalf("no Pod for %s", turns[0].GetName())
			}
			// The humans are told, once, that the agent was.
			sc, ok := podCondition(pod, protocol.ConditionSilent)
			if !ok || sc.Reason != protocol.ReasonFor(tt.detector) || !strings.Contains(sc.Message, "[delivered to the agent]") {
				t.Errorf("Silent condition %+v, want reason %s and delivered", sc, protocol.ReasonFor(tt.detector))
			}
			n, msgs := runEvents(name, "Nudged")
			if n != 1 || !strings.Contains(strings.Join(msgs, "\n"), "delivered to the agent") {
				t.Errorf("%d Nudged events %q, want one saying it was delivered", n, msgs)
			}
			tc, tripped := podCondition(pod, protocol.ConditionTripped)
			if tripped != tt.tripped {
				t.Errorf("Tripped condition %+v, want tripped=%v", tc, tt.tripped)
			}
			if tt.tripped {
				if str(r, "status", "fault", "detector") != "identicalCalls" {
					t.Errorf("fault %v", r.Object["status"])
				}
				return // the agent was stopped: it said nothing more
			}
			if err := waitAgentTerminated(pod.Name); err != nil {
				t.Fatal(err)
			}
			logs, err := env.kube.CoreV1().Pods(env.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "agent"}).DoRaw(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			text := agentTexts(string(logs))
			if !strings.Contains(text, tt.heard) {
				t.Fatalf("the agent did not say %q; it said:\n%s", tt.heard, text)
			}
			if m := latencyRe.FindStringSubmatch(text); m != nil {
				ms, _ := strconv.Atoi(m[1])
				t.Logf("nudge latency: %d ms from the line the %s nudge names to the hook's output in the agent (tool calls every 1s)", ms, m[2])
				env.report.add("nudge latency "+tt.react, time.Duration(ms)*time.Millisecond)
			}
			checkInspection(t, text)
		})
	}
}

var latencyRe = regexp.MustCompile(`nudge latency ([0-9]+)ms \(([A-Za-z]+) at line`)

// agentTexts is the text of the agent's messages in a claude stream.
func agentTexts(log string) string {
	var b strings.Builder
	for _, line := range strings.Split(log, "\n") {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Type, Text string
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "assistant" {
			continue
		}
		for _, c := range ev.Message.Content {
			if c.Type == "text" {
				b.WriteString(c.Text + "\n")
			}
		}
	}
	return b.String()
}

// checkInspection reads what the agent saw from inside its container: the
// token is not readable, and the nudges volume holds the nudges file (only
// valid nudge records), the hook and the hook's state, the adapters, the
// acks and verdicts, and the ready marker: nothing token-like.
func checkInspection(t *testing.T, text string) {
	t.Helper()
	_, js, ok := strings.Cut(text, "inspect: ")
	if !ok {
		t.Fatalf("the agent told no inspection:\n%s", text)
	}
	js, _, _ = strings.Cut(js, "\n")
	var in struct {
		Files         map[string]string `json:"files"`
		Nudges        string            `json:"nudges"`
		TokenLike     []string          `json:"tokenLike"`
		TokenReadable bool              `json:"tokenReadable"`
	}
	if err := json.Unmarshal([]byte(js), &in); err != nil {
		t.Fatalf("inspection %q: %v", js, err)
	}
	if in.TokenReadable || len(in.TokenLike) > 0 {
		t.Errorf("the agent reaches a token: readable %v, token-like files %v", in.TokenReadable, in.TokenLike)
	}
	for f := range in.Files {
		switch f {
		case nudgefile.File, nudgefile.HookPath, "hook-state.json", "hook-calls.json", nudgefile.AckFile, nudgefile.VerdictFile,
			nudgefile.OpencodePlugin, nudgefile.PiExtension, nudgefile.ReadyFile:
		default:
			t.Errorf("the nudges volume holds %s (%s)", f, in.Files[f])
		}
	}
	records := 0
	for _, line := range strings.Split(in.Nudges, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(nudgefile.Parse([]byte(line))) != 1 {
			t.Errorf("the nudges file holds a line that is not a nudge: %q", line)
		}
		records++
	}
	if records == 0 {
		t.Errorf("the nudges file is empty: %q", in.Nudges)
	}
	t.Logf("the agent sees %v; %d nudge record(s)", in.Files, records)
}
