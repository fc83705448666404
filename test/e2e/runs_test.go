//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Labels every AgentTurn and Pod carries (docs/operator.md).
const (
	labelRun     = "turnwatch.dev/run"
	labelAttempt = "turnwatch.dev/attempt"
)

// runSpec describes an AgentRun whose agent is the fake agent.
type runSpec struct {
	scenario, format string
	speed            float64
	guards           map[string]any
	rerolls          *int64 // nil: the cluster default (one reroll)
	session          string
	cont             bool
	extraArgs        []string // more fake agent flags (e.g. --pad)
}

// agentRun renders the AgentRun as the API expects it.
func agentRun(name string, s runSpec) *unstructured.Unstructured {
	args := []any{"--scenario", s.scenario, "--format", s.format, "--speed", strconv.FormatFloat(s.speed, 'f', -1, 64)}
	for _, a := range s.extraArgs {
		args = append(args, a)
	}
	spec := map[string]any{
		"prompt": "e2e " + s.scenario + " in " + s.format,
		"format": s.format,
		"template": map[string]any{"spec": map[string]any{
			"hostNetwork":                   true,
			"terminationGracePeriodSeconds": int64(5),
			"containers": []any{map[string]any{
				"name":            "agent",
				"image":           fakeAgentImage,
				"imagePullPolicy": "Never",
				"args":            args,
			}},
		}},
	}
	if s.guards != nil {
		spec["guards"] = s.guards
	}
	if s.rerolls != nil {
		spec["rerolls"] = map[string]any{"max": *s.rerolls}
	}
	if s.session != "" {
		spec["session"] = s.session
	}
	if s.cont {
		spec["continue"] = true
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "turnwatch.dev/v1alpha1",
		"kind":       "AgentRun",
		"metadata":   map[string]any{"name": name, "namespace": env.ns},
		"spec":       spec,
	}}
}

func createRun(t *testing.T, name string, s runSpec) {
	t.Helper()
	_, err := env.dyn.Resource(agentRunGVR).Namespace(env.ns).Create(context.Background(), agentRun(name, s), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create AgentRun %s: %v", name, err)
	}
}

func getRun(name string) (*unstructured.Unstructured, bool) {
	obj, err := env.obs.runs.ByNamespace(env.ns).Get(name)
	if err != nil {
		return nil, false
	}
	return obj.(*unstructured.Unstructured), true
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func num(u *unstructured.Unstructured, path ...string) int64 {
	v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// waitRun waits until the AgentRun reaches a terminal phase and returns it.
func waitRun(t *testing.T, name string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var run *unstructured.Unstructured
	err := waitFor(context.Background(), timeout, "AgentRun "+name+" to finish", func() (bool, error) {
		r, ok := getRun(name)
		if !ok {
			return false, nil
		}
		run = r
		switch str(r, "status", "phase") {
		case "Succeeded", "Faulted", "Aborted":
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, debugRun(name))
	}
	return run
}

// turnsOf returns the run's AgentTurns ordered by attempt, as the API
// server has them now. Not from the observer's informer: the runs and the
// turns are two watches, and nothing orders their events, so a run seen
// Faulted there can come before its turn's Failed, which the API server
// stored first (TestTrips read a settled run's turn without its outcome).
func turnsOf(run string) []*unstructured.Unstructured {
	list, err := env.dyn.Resource(agentTurnGVR).Namespace(env.ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{labelRun: run}).String()})
	if err != nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i], "spec", "attempt") < num(out[j], "spec", "attempt") })
	return out
}

// podOfTurn returns the turn's Pod: status.podName, else the labels.
func podOfTurn(run string, turn *unstructured.Unstructured) (*corev1.Pod, bool) {
	if name := str(turn, "status", "podName"); name != "" {
		return podOf(name)
	}
	attempt := strconv.FormatInt(num(turn, "spec", "attempt"), 10)
	objs, _ := env.obs.pods.GetIndexer().ByIndex("namespace", env.ns)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Labels[labelRun] == run && p.Labels[labelAttempt] == attempt {
			return p, true
		}
	}
	return nil, false
}

// runEvents returns the Events on the AgentRun with the given reason.
func runEvents(name, reason string) (n int32, msgs []string) {
	list, err := env.kube.CoreV1().Events(env.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=AgentRun,involvedObject.name=" + name})
	if err != nil {
		return 0, nil
	}
	for _, e := range list.Items {
		if e.Reason == reason {
			n += max(e.Count, 1)
			msgs = append(msgs, e.Message)
		}
	}
	return n, msgs
}

// summary reads the sidecar's Finished condition on a Pod.
func summary(p *corev1.Pod) (protocol.Summary, bool) {
	c, ok := podCondition(p, protocol.ConditionFinished)
	if !ok || c.Status != corev1.ConditionTrue {
		return protocol.Summary{}, false
	}
	var s protocol.Summary
	if err := json.Unmarshal([]byte(c.Message), &s); err != nil {
		return protocol.Summary{}, false
	}
	return s, true
}

// scenarioLines is the number of lines of an embedded scenario stream.
func scenarioLines(t *testing.T, format, scenario string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.root, "test/fakeagent/scenarios", format, scenario+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func sameDecimal(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// debugRun gathers what a failing test should show: describe of the run,
// its turns and Pods, and the tail of the manager's log.
func debugRun(name string) string {
	var b strings.Builder
	b.WriteString(describe("agentrun", name))
	for _, turn := range turnsOf(name) {
		b.WriteString(describe("agentturn", turn.GetName()))
		if p, ok := podOfTurn(name, turn); ok {
			b.WriteString(describe("pod", p.Name))
			if logs, err := kubectl("-n", env.ns, "logs", p.Name, "-c", protocol.SidecarContainerName, "--tail=20"); err == nil {
				b.WriteString("--- sidecar log tail\n" + logs)
			}
		}
	}
	if operator.log != "" {
		out, _ := os.ReadFile(operator.log)
		b.WriteString("--- manager log tail\n" + tail(string(out), 30) + "\n")
	}
	return b.String()
}

func fmtTurns(turns []*unstructured.Unstructured) string {
	var parts []string
	for _, t := range turns {
		parts = append(parts, fmt.Sprintf("%s(attempt %d, %s %s)", t.GetName(), num(t, "spec", "attempt"),
			str(t, "status", "outcome"), str(t, "status", "error", "type")))
	}
	return strings.Join(parts, ", ")
}
