//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// realCases are the scenarios every CLI plays on the node: a healthy task, a
// loop, a stall, a whitespace spiral, and the model refusing the request.
// The verdict the user must read is the scenario's for that CLI
// (Scenario.Verdict: a CLI whose stream is blind to it succeeds, one whose
// own guard ends it first fails as agent-error).
var realCases = []string{"healthy", "identicalLoop", "stall", "whitespace", "apiError"}

// realAttempts is how many turns the default policy makes of a verdict's
// class: one reroll for everything but a success.
func realAttempts(class string) int {
	if class == "" {
		return 1
	}
	return 2
}

var agentImages struct {
	once sync.Once
	err  error
}

// needAgentImages builds the five CLIs' images (hack/cli-images.sh: the CLIs
// hack/clis.sh installed, cached) and imports them into the node.
func needAgentImages(t *testing.T) {
	t.Helper()
	agentImages.once.Do(func() {
		start := time.Now()
		_, agentImages.err = script(env.root, "hack/cli-images.sh")
		env.report.add("agent CLI images (hack/cli-images.sh)", time.Since(start))
	})
	if agentImages.err != nil {
		t.Fatal(agentImages.err)
	}
}

// TestRealAgents runs each config/samples/cli_*.yaml on the node as a user
// would apply it, its image the one hack/cli-images.sh built, with only the
// model endpoint pointed at a scripted model (one per run, on the host's
// loopback, which hostNetwork Pods share) and the API key a dummy. Each
// plays realCases; the test asserts what the user reads and what the model
// was told.
func TestRealAgents(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	files, err := filepath.Glob(filepath.Join(env.root, "config/samples/cli_*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("samples: %v %v", files, err)
	}
	samples := map[string]*unstructured.Unstructured{}
	keys := map[string]string{}
	for _, f := range files {
		run := readSampleRun(t, f)
		samples[str(run, "spec", "format")] = run
		for _, k := range secretKeys(run) {
			keys[k] = "scripted"
		}
	}
	if _, err := env.kube.CoreV1().Secrets(env.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-api-keys"}, StringData: keys}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sem := make(chan struct{}, 3) // two cores: three CLIs starting at once is plenty
	for format, sample := range samples {
		for _, c := range realCases {
			t.Run(format+"/"+c, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				playReal(t, format, sample, c)
			})
		}
	}
}

// playReal runs one scenario and checks its story.
func playReal(t *testing.T, format string, sample *unstructured.Unstructured, scenario string) {
	sc, err := scriptedmodel.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	detector, class, ex := sc.Verdict(format)
	want := realVerdict{detector: detector, class: class, attempts: realAttempts(class), phase: "Succeeded"}
	if class != "" {
		want.phase = "Faulted"
	}
	model, url := serveModel(t, sc)
	name := "real-" + format + "-" + strings.ToLower(scenario)
	ep := scriptedmodel.Endpoints[format]
	run := sampleOnNode(t, sample, name, url+ep.Suffix, ep.Env, sc.Guards)
	if out, err := kubectlApply(t, run); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	waitRun(t, name, 5*time.Minute)
	r, _ := getRun(name)
	turns := turnsOf(name)
	t.Logf("%s: %s, %d model requests; turns: %s %s%s", name, str(r, "status", "phase"), len(model.Requests()), fmtTurns(turns), ex.Blind, ex.Own)
	if got := str(r, "status", "phase"); got != want.phase || len(turns) != want.attempts {
		t.Fatalf("phase %s with %d turns, want %s with %d\n%s\n%s", got, len(turns), want.phase, want.attempts, modelLog(model), debugRun(name))
	}
	if class != "" {
		checkRealFault(t, name, r, turns, want)
	} else {
		checkRealSuccess(t, name, r, scenario == "healthy")
	}
	checkFreshTurns(t, name, model, turns)
	if detector != "" {
		for _, turn := range turns {
			measureRealStop(t, format, name, turn, detector == monitor.DetectorStall)
		}
		checkRealExplain(t, name, want)
	}
}

// realVerdict is what the user must read of a run.
type realVerdict struct {
	phase, detector, class string
	attempts               int
}

// serveModel starts a scripted model on the host's loopback for one run.
func serveModel(t *testing.T, sc scriptedmodel.Scenario) (*scriptedmodel.Server, string) {
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: model}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return model, "http://" + ln.Addr().String()
}

func readSampleRun(t *testing.T, path string) *unstructured.Unstructured {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// agentContainers are the sample's containers (the agent and any other).
func agentContainers(run *unstructured.Unstructured) []any {
	cs, _, _ := unstructured.NestedSlice(run.Object, "spec", "template", "spec", "containers")
	return cs
}

// secretKeys are the keys of the Secrets the sample's containers read.
func secretKeys(run *unstructured.Unstructured) []string {
	var keys []string
	for _, c := range agentContainers(run) {
		envs, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range envs {
			if k, ok, _ := unstructured.NestedString(e.(map[string]any), "valueFrom", "secretKeyRef", "key"); ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// sampleOnNode is the sample as written, named, in the test namespace, with
// its endpoint env set to the scripted model's URL, the Pod on the host's
// network (this node has no Pod network: SPEC's hostNetwork Pods), and the
// scenario's guards, if any, over the sample's.
func sampleOnNode(t *testing.T, sample *unstructured.Unstructured, name, url, endpointEnv, guards string) *unstructured.Unstructured {
	run := sample.DeepCopy()
	run.SetName(name)
	run.SetNamespace(env.ns)
	cs := agentContainers(run)
	set := false
	for _, c := range cs {
		envs, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range envs {
			if m := e.(map[string]any); m["name"] == endpointEnv {
				m["value"], set = url, true
			}
		}
		_ = unstructured.SetNestedSlice(c.(map[string]any), envs, "env")
	}
	if !set {
		t.Fatalf("sample %s names no %s", sample.GetName(), endpointEnv)
	}
	_ = unstructured.SetNestedSlice(run.Object, cs, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedField(run.Object, true, "spec", "template", "spec", "hostNetwork")
	if guards != "" {
		// The scenario's guards over the sample's (a stall needs a timeout the test can wait for).
		var extra map[string]any
		if err := json.Unmarshal([]byte(guards), &extra); err != nil {
			t.Fatal(err)
		}
		g, _, _ := unstructured.NestedMap(run.Object, "spec", "guards")
		if g == nil {
			g = map[string]any{}
		}
		maps.Copy(g, extra)
		_ = unstructured.SetNestedMap(run.Object, g, "spec", "guards")
	}
	return run
}

// checkRealFault: the fault on the run, on each turn and on each kept Pod,
// and in `kubectl describe`.
func checkRealFault(t *testing.T, name string, r *unstructured.Unstructured, turns []*unstructured.Unstructured, c realVerdict) {
	t.Helper()
	if got := str(r, "status", "fault", "class"); got != c.class {
		t.Errorf("status.fault.class %q, want %q\n%s", got, c.class, debugRun(name))
	}
	if got := str(r, "status", "fault", "detector"); got != c.detector {
		t.Errorf("status.fault.detector %q, want %q", got, c.detector)
	}
	for _, turn := range turns {
		tn := turn.GetName()
		if got := str(turn, "status", "error", "type"); str(turn, "status", "outcome") != "Failed" || got != c.class {
			t.Errorf("turn %s: outcome %q error.type %q, want Failed %s", tn, str(turn, "status", "outcome"), got, c.class)
		}
		pod, ok := podOfTurn(name, turn)
		if !ok {
			t.Errorf("turn %s: its Pod is gone; a failed turn's Pod is kept for inspection", tn)
			continue
		}
		if err := waitAgentTerminated(pod.Name); err != nil {
			t.Error(err)
		}
		logs, err := kubectl("-n", env.ns, "logs", pod.Name, "-c", "agent")
		if err != nil || strings.TrimSpace(logs) == "" {
			t.Errorf("the kept Pod %s's agent log: %v (%d lines)", pod.Name, err, strings.Count(logs, "\n"))
		}
		if c.detector == "" {
			continue
		}
		cond, ok := podCondition(pod, protocol.ConditionTripped)
		if !ok || cond.Reason != protocol.ReasonFor(c.detector) {
			t.Errorf("Pod %s condition %s = %+v, want reason %s", pod.Name, protocol.ConditionTripped, cond, protocol.ReasonFor(c.detector))
		}
	}
	wants := []string{"Faulted", c.class, str(r, "status", "fault", "message")}
	if c.attempts == 2 {
		wants = append(wants, "Rerolled")
	}
	if text := describe("agentrun", name); !containsAllOK(text, wants) {
		missing, _ := containsAll(text, wants...)
		t.Errorf("kubectl describe agentrun %s lacks %q:\n%s", name, missing, text)
	}
}

func containsAllOK(s string, wants []string) bool { _, ok := containsAll(s, wants...); return ok }

// checkRealSuccess: the turn done, with its cost (the CLI's own, or its
// tokens priced), and a step when the scenario ran a tool.
func checkRealSuccess(t *testing.T, name string, r *unstructured.Unstructured, ranTool bool) {
	t.Helper()
	if ranTool && num(r, "status", "steps") < 1 {
		t.Errorf("status.steps = %d on a task that ran a tool", num(r, "status", "steps"))
	}
	cost, err := monitor.ParseMoney(str(r, "status", "costUSD"))
	if err != nil || cost <= 0 {
		t.Errorf("status.costUSD = %q (%v): the healthy turn's tokens or the CLI's own cost must show", str(r, "status", "costUSD"), err)
	}
	if out, err := kubectl("-n", env.ns, "get", "agentrun", name); err != nil || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get agentrun %s: %v\n%s", name, err, out)
	}
}

// checkFreshTurns: every turn starts a fresh conversation, a reroll's
// included: the model sees at least one first request (the prompt and
// nothing else) per turn. A reroll that resumed the turn before it would
// carry that turn's calls and answers instead. (Requests do not say which
// Pod sent them, and a stopped CLI may still send one while the next turn
// starts, so the check counts rather than splits by time.)
func checkFreshTurns(t *testing.T, name string, model *scriptedmodel.Server, turns []*unstructured.Unstructured) {
	t.Helper()
	fresh := 0
	for _, q := range model.Main() {
		if q.Conversation.Fresh() {
			fresh++
		}
	}
	if fresh < len(turns) {
		t.Errorf("%s: %d turns but %d fresh conversations: a reroll resumed an earlier turn\n%s", name, len(turns), fresh, modelLog(model))
	}
}

// measureRealStop reports how long a tripped turn's CLI took to go, per
// CLI: from the Pod's Tripped condition (as the watch saw it) to the agent
// container's end, and from the kubelet's timestamp of the tripping line
// (none for a stall: its trip is a silence after the last line).
func measureRealStop(t *testing.T, format, run string, turn *unstructured.Unstructured, stall bool) {
	t.Helper()
	pod, ok := podOfTurn(run, turn)
	if !ok {
		return
	}
	if err := waitAgentTerminated(pod.Name); err != nil {
		t.Error(err)
		return
	}
	stopped, _ := env.obs.seen(containerDoneKey(pod.Name, "agent"))
	if cond, ok := env.obs.seen(podCondKey(pod.Name, protocol.ConditionTripped)); ok {
		env.report.sample(format+": Pod condition Tripped -> agent container terminated", stopped.Sub(cond))
		t.Logf("turn %s: Tripped condition -> %s gone in %v", turn.GetName(), format, stopped.Sub(cond).Round(time.Millisecond))
	}
	if stall {
		return
	}
	line, err := tripLineTime(pod.Name, format)
	if err != nil {
		t.Errorf("turn %s: %v", turn.GetName(), err)
		return
	}
	env.report.sample(format+": tripping line -> agent container terminated", stopped.Sub(line))
}

// checkRealExplain: `kubectl turnwatch explain` tells the tripped run's story
// from the real CLI's stream.
func checkRealExplain(t *testing.T, name string, c realVerdict) {
	t.Helper()
	bin := needTools(t)
	cmd := exec.Command(filepath.Join(bin, "kubectl"), "turnwatch", "explain", name, "-n", env.ns)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl turnwatch explain %s: %v\n%s", name, err, out)
	}
	wants := []string{fmt.Sprintf("AgentRun %s/%s: Faulted (%s, %s)", env.ns, name, c.class, c.detector)}
	switch c.detector {
	case monitor.DetectorStall: // the stream shows no verdict: the silence came after its last line
	case monitor.DetectorIdenticalCalls:
		wants = append(wants, "TRIPPED identicalCalls (runaway) at line", "(identical x4)")
	default:
		wants = append(wants, fmt.Sprintf("TRIPPED %s (%s) at line", c.detector, c.class))
	}
	if missing, ok := containsAll(string(out), wants...); !ok {
		t.Errorf("kubectl turnwatch explain %s lacks %q:\n%s", name, missing, out)
	}
}

// modelLog is the scripted model's requests, one line each, for a failure.
func modelLog(m *scriptedmodel.Server) string {
	var b strings.Builder
	for _, q := range m.Requests() {
		fmt.Fprintf(&b, "model request %d %s %s side=%v step=%d messages=%d status=%d: %s\n",
			q.Seq, q.Time.Format("15:04:05.000"), q.Path, q.Side, q.Step, q.Messages, q.Status, q.Reply)
	}
	return b.String()
}
