package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Flags may come before and after the run's name, as with kubectl.
func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args     []string
		pos      []string
		ns, out  string
		turnPick string
	}{
		{[]string{"looping", "-n", "demo"}, []string{"looping"}, "demo", "text", ""},
		{[]string{"-n", "demo", "looping", "-o", "json"}, []string{"looping"}, "demo", "json", ""},
		{[]string{"--namespace=x", "r", "--turn", "1"}, []string{"r"}, "x", "text", "1"},
		{[]string{"a", "b"}, []string{"a", "b"}, "", "text", ""},
	}
	for _, tt := range tests {
		var f flags
		fs := newFlagSet(&f, io.Discard)
		pos, err := parse(fs, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(pos, ",") != strings.Join(tt.pos, ",") || f.namespace != tt.ns || f.output != tt.out || f.turn != tt.turnPick {
			t.Errorf("%v: pos %v ns %q output %q turn %q", tt.args, pos, f.namespace, f.output, f.turn)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"describe", "x"}, {"explain"}, {"explain", "x", "-o", "yaml"}, {"explain", "--bogus"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: kubectl turnwatch explain") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// Help is asked for, not a mistake: it goes to stdout and exits 0, as
// kubectl's own commands do; a bad flag still exits 2.
func TestHelpExitsZero(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "kubectl turnwatch COMMAND -h"},
		{[]string{"help"}, "kubectl turnwatch COMMAND -h"},
		{[]string{"explain", "--help"}, "usage: kubectl turnwatch explain"},
		{[]string{"explain", "x", "-h"}, "usage: kubectl turnwatch explain"},
		{[]string{"drill", "--help"}, "usage: kubectl turnwatch drill"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != 0 || !strings.Contains(out.String(), tt.want) || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tt.args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"drill", "--bogus"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: kubectl turnwatch drill") || out.Len() != 0 {
		t.Errorf("drill --bogus: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestChooseTurn(t *testing.T) {
	turns := []explain.Turn{{Name: "r-0", Attempt: 0}, {Name: "r-1", Attempt: 1}, {Name: "r-2", Attempt: 2}}
	tests := []struct {
		pick, fault, want string
		ok                bool
	}{
		{"", "", "r-2", true},
		{"", "r-1", "r-1", true},
		{"0", "r-1", "r-0", true},
		{"r-2", "", "r-2", true},
		{"r-9", "", "", false},
		{"", "gone-7", "r-2", true},
	}
	for _, tt := range tests {
		r := &explain.Run{Turns: turns}
		if tt.fault != "" {
			r.Fault = &explain.Turn{Name: tt.fault}
		}
		got, ok := chooseTurn(r, tt.pick)
		if ok != tt.ok || got.Name != tt.want {
			t.Errorf("pick %q fault %q: %q %v, want %q %v", tt.pick, tt.fault, got.Name, ok, tt.want, tt.ok)
		}
	}
	if _, ok := chooseTurn(&explain.Run{}, ""); ok {
		t.Error("a turn chosen from none")
	}
}

// The status list keeps deleted turns; the AgentTurns add errors and Pods.
func TestTurnsOf(t *testing.T) {
	run := &twv1.AgentRun{Status: twv1.AgentRunStatus{Turns: []twv1.TurnRef{
		{Name: "r-0", Attempt: 0, Outcome: "Failed", ErrorType: "runaway", Steps: 4, CostUSD: "0.1"},
		{Name: "r-1", Attempt: 1, Outcome: "Failed", ErrorType: "runaway", Steps: 4},
	}}}
	items := []twv1.AgentTurn{
		{ObjectMeta: metav1.ObjectMeta{Name: "r-1"}, Spec: twv1.AgentTurnSpec{Attempt: 1}, Status: twv1.AgentTurnStatus{
			Outcome: "Failed", Steps: 4, CostUSD: "0.2", PodName: "r-1",
			Error: &twv1.TurnError{Type: "runaway", Detector: "identicalCalls", Message: "repeated"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "r-2"}, Spec: twv1.AgentTurnSpec{Attempt: 2}},
	}
	got := turnsOf(run, items)
	if len(got) != 3 || got[0].Pod != "" || got[0].CostUSD != "0.1" || got[1].Detector != "identicalCalls" ||
		got[1].Pod != "r-1" || got[2].Name != "r-2" || got[2].Pod != "r-2" {
		t.Errorf("turns %+v", got)
	}
}

// A running turn shows its sidecar's latest report, kept in the run's
// status.progress; a settled one its own figures.
func TestTurnsOfRunning(t *testing.T) {
	run := &twv1.AgentRun{Status: twv1.AgentRunStatus{
		Turns:    []twv1.TurnRef{{Name: "r-0", Outcome: "Failed", Steps: 4}, {Name: "r-1", Attempt: 1}},
		Progress: &twv1.RunProgress{Turn: "r-1", Steps: 7, CostUSD: "0.3"},
	}}
	items := []twv1.AgentTurn{{ObjectMeta: metav1.ObjectMeta{Name: "r-1"}, Spec: twv1.AgentTurnSpec{Attempt: 1}}}
	got := turnsOf(run, items)
	if len(got) != 2 || got[0].Steps != 4 || got[1].Steps != 7 || got[1].CostUSD != "0.3" {
		t.Errorf("turns %+v", got)
	}
	run.Status.Progress.Turn = "r-0" // a report of a settled turn changes nothing
	if got := turnsOf(run, items); got[0].Steps != 4 || got[1].Steps != 0 {
		t.Errorf("turns %+v", got)
	}
}

func TestSidecarOptions(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: protocol.SidecarContainerName, Env: []corev1.EnvVar{
			{Name: protocol.EnvFormat, Value: "codex"},
			{Name: protocol.EnvGuards, Value: `{"identicalCalls": 3}`},
			{Name: protocol.EnvAgentContainer, Value: "worker"},
			{Name: protocol.EnvPriorCostUSD, Value: "0.5"},
			{Name: protocol.EnvAudit, Value: "identicalCalls,stall"},
		}}},
		Containers: []corev1.Container{{Name: "worker"}},
	}}
	opts, c, err := sidecarOptions(pod, "claude")
	if err != nil || opts.Format != "codex" || opts.Guards.IdenticalCalls != 3 || c != "worker" || opts.PriorCostUSD != "0.5" ||
		strings.Join(opts.Audit, ",") != "identicalCalls,stall" {
		t.Errorf("%+v %q %v", opts, c, err)
	}
	pod.Spec.InitContainers[0].Env = append(pod.Spec.InitContainers[0].Env, corev1.EnvVar{Name: protocol.EnvGuards, Value: "{"})
	if _, _, err := sidecarOptions(pod, ""); err == nil {
		t.Error("bad guards accepted")
	}
}

func TestRunText(t *testing.T) {
	r := &explain.Run{Namespace: "ns", Name: "r", Phase: "Faulted",
		Fault:      &explain.Turn{Name: "r-1", Class: "runaway", Detector: "identicalCalls", Message: "repeated an identical tool call 4 times"},
		Turns:      []explain.Turn{{Name: "r-0", Outcome: "Failed", Class: "runaway", Detector: "identicalCalls", Steps: 4}, {Name: "r-1", Attempt: 1, Outcome: "Failed"}},
		StreamTurn: "r-1", StreamError: "its Pod r-1: not found"}
	var b bytes.Buffer
	if err := r.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AgentRun ns/r: Faulted (runaway, identicalCalls): repeated an identical tool call 4 times in turn r-1",
		"r-0", "runaway (identicalCalls)", "turn r-1: no stream to show: its Pod r-1: not found"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// An attached Pod's sidecar lays the guards annotation over its guards,
// capped to the limits; explain reads them as it does, and an annotation
// that does not read leaves the guards as they are.
func TestSidecarOptionsOverride(t *testing.T) {
	tests := []struct {
		name, override, limits string
		identical, steps       int
	}{
		{"over, capped", `{"identicalCalls": 9, "stepBudget": 500}`, `{"stepBudget": 100}`, 9, 100},
		{"over, under the limit", `{"stepBudget": 50}`, `{"stepBudget": 100}`, 3, 50},
		{"an annotation that does not read", `{"maxSteps": 50}`, `{"stepBudget": 100}`, 3, 256},
		{"limits alone cap the guards", "", `{"identicalCalls": 2}`, 2, 256},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: protocol.SidecarContainerName, Env: []corev1.EnvVar{
			{Name: protocol.EnvGuards, Value: `{"identicalCalls": 3, "stepBudget": 256}`},
			{Name: protocol.EnvGuardsOverride, Value: tt.override},
			{Name: protocol.EnvGuardLimits, Value: tt.limits},
			{Name: protocol.EnvPrices}, // an attached Pod's, whose namespace sets no prices
		}}}}}
		opts, _, err := sidecarOptions(pod, "claude")
		if err != nil || opts.Guards.IdenticalCalls != tt.identical || opts.Guards.StepBudget != tt.steps {
			t.Errorf("%s: identicalCalls %d stepBudget %d %v, want %d %d", tt.name, opts.Guards.IdenticalCalls, opts.Guards.StepBudget, err, tt.identical, tt.steps)
		}
	}
}
