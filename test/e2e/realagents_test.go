//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// realAttempts is how many turns the default policy makes of a verdict's
// class: none more for a success, a length stop or overspend; one reroll
// (or retry, for agent-error) for the rest.
func realAttempts(class string) int {
	switch class {
	case "", "length", "overspend":
		return 1
	}
	return 2
}

// linedDetectors trip on a line that `kubectl turnwatch explain` marks; a
// stall (a silence), a length stop (the end) and overspend (the sum) show
// in its header only.
var linedDetectors = []string{monitor.DetectorIdenticalCalls, monitor.DetectorCycles, monitor.DetectorRepeatedErrors,
	monitor.DetectorDegeneration, monitor.DetectorRepetition}

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
// plays the nodeScenarios that apply to its CLI, expecting the scenario's
// verdict for that CLI (Scenario.Verdict); the test asserts what the user
// reads and what the model was told.
func TestRealAgents(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	files, err := filepath.Glob(filepath.Join(env.root, "config/samples/cli_*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("samples: %v %v", files, err)
	}
	samples := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		run := readSampleRun(t, f)
		samples[str(run, "spec", "format")] = run
	}
	ensureAPIKeys(t, files)
	ensureGatewayKey(t, env.ns)
	// Not beside the parallel phase's drills: as many at once as go test's
	// -parallel allows (make test-e2e: E2E_PARALLEL).
	for format, sample := range samples {
		for _, sc := range scriptedmodel.Scenarios {
			if !sc.Applies(format) || !slices.Contains(nodeScenarios, sc.Name) {
				continue
			}
			c := sc.Name
			t.Run(format+"/"+c, func(t *testing.T) {
				t.Parallel()
				playReal(t, format, sample, c)
			})
		}
	}
}

// nodeScenarios are what TestRealAgents plays on the node: what only a node
// shows of a real CLI. The CLI x scenario matrix's home is test/realcli (the
// engine's verdict of each CLI's stream, the hooks), and TestDrill plays
// every scenario of every sample on the node through the drill (each
// verdict with the sample's own guards, nudge delivery, refusal, reroll and
// fresh conversation: README's tables). Here: a loop's trip, the refused
// call, the Pod's stop and a fresh reroll (identicalLoop); a nudge delivered
// through the shared volume (silentRun); the stop of a CLI that waits on
// its model, by SIGTERM (stall).
var nodeScenarios = []string{"identicalLoop", "silentRun", "stall"}

// playReal runs one scenario and checks its story.
func playReal(t *testing.T, format string, sample *unstructured.Unstructured, scenario string) {
	sc, err := scriptedmodel.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	detector, class, ex := sc.Verdict(format, true)
	want := realVerdict{detector: detector, class: class, attempts: realAttempts(class), phase: "Succeeded"}
	if class != "" {
		want.phase = "Faulted"
	}
	// The loops and the nudge go through the model gateway: the CLI gets
	// no key, the model wants the gateway's. The stall's story is the stop
	// of a CLI waiting on its model, by SIGTERM, as without a gateway: it
	// runs direct (docs/e2e.md: gemini's reroll through the gateway broke
	// under the full suite's load, a race fixed since).
	through := scenario != "stall"
	key := map[bool]string{true: gatewayKey}[through]
	model, url := serveModelWithKey(t, sc, key)
	name := "real-" + format + "-" + strings.ToLower(scenario)
	ep := scriptedmodel.Endpoints[format]
	run := sampleOnNode(t, sample, name, url+ep.Suffix, ep.Env, sc.Guards)
	if through {
		withGateway(run, url)
	}
	peak := sidecarPeak(name + "-0")
	if out, err := kubectlApply(t, run); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	waitRun(t, name, 5*time.Minute)
	if kb := peak(); kb > 0 && scenario == "silentRun" {
		env.report.note("Gateway: %s %s, the first turn's sidecar peak resident set %.1f MiB (%d model requests)", format, scenario, float64(kb)/1024, len(model.Requests()))
	}
	r, _ := getRun(name)
	turns := turnsOf(name)
	t.Logf("%s: %s, %d model requests; turns: %s %s%s", name, str(r, "status", "phase"), len(model.Requests()), fmtTurns(turns), ex.Blind, ex.Own)
	if got := str(r, "status", "phase"); got != want.phase || len(turns) != want.attempts {
		t.Fatalf("phase %s with %d turns, want %s with %d\n%s\n%s", got, len(turns), want.phase, want.attempts, modelLog(model), debugRun(name))
	}
	if want.class != "" {
		checkRealFault(t, name, r, turns, want)
	} else {
		checkRealSuccess(t, name, r, scenario == "healthy" || scenario == "silentRun")
	}
	if detector == monitor.DetectorSilentRun || (want.class == "" && class != "") { // nudged, or warned (warnFirst)
		checkRealNudged(t, name, turns)
	}
	if through {
		checkMetered(t, name, scenario, r, turns, model)
	}
	checkFreshTurns(t, name, model, turns)
	if through {
		checkNoneBlind(t, name, turns)
	}
	checkStreamReadsAsItsFormat(t, name, turns)
	checkRealHooks(t, format, scenario, name, sample, model, turns)
	if want.class != "" && want.detector != "" {
		for _, turn := range turns {
			measureRealStop(t, format, name, turn, want.detector == monitor.DetectorStall)
		}
		if want.detector != monitor.DetectorStall {
			checkEndedByItself(t, name, turns)
		}
		checkRealExplain(t, name, want)
	}
}

// checkRealNudged: a silent run (or one warnFirst warned) is nudged, not
// stopped: a Nudged Event, the Pod's Silent condition, no trip.
func checkRealNudged(t *testing.T, name string, turns []*unstructured.Unstructured) {
	t.Helper()
	if n, _ := runEvents(name, "Nudged"); n < 1 {
		t.Errorf("%s: no Nudged Event\n%s", name, describe("agentrun", name))
	}
	pod, ok := podOfTurn(name, turns[0])
	if !ok {
		t.Fatalf("no Pod for %s", turns[0].GetName())
	}
	if _, silent := podCondition(pod, protocol.ConditionSilent); !silent {
		t.Errorf("Pod %s has no %s condition", pod.Name, protocol.ConditionSilent)
	}
	if _, tripped := podCondition(pod, protocol.ConditionTripped); tripped {
		t.Errorf("Pod %s tripped on a silent run", pod.Name)
	}
}

// realVerdict is what the user must read of a run.
type realVerdict struct {
	phase, detector, class string
	attempts               int
}

// serveModel starts a scripted model on the host's loopback for one run.
func serveModel(t *testing.T, sc scriptedmodel.Scenario) (*scriptedmodel.Server, string) {
	return serveModelWithKey(t, sc, "")
}

// serveModelWithKey serves a scripted model that wants key ("" none).
func serveModelWithKey(t *testing.T, sc scriptedmodel.Scenario, key string) (*scriptedmodel.Server, string) {
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := model.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return model, url
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
// network (this node has no Pod network: docs/e2e.md#the-local-node), and the
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
// CLI, from the Pod's Tripped condition to the agent container's end as
// containerd recorded it (both in whole seconds: the condition's
// lastTransitionTime and the container's finishedAt), and as the watch saw
// the kubelet report it. Only a stall measures the stop path: the CLI would
// wait for the model forever, where a looping or degenerate CLI may end by
// itself right after its trip. A stalled CLI that outlives half the Pod's
// grace ignored SIGTERM: the test fails (docs/agents.md "Stop latency").
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
	pod, _ = podOf(pod.Name)
	cond, ok1 := podCondition(pod, protocol.ConditionTripped)
	cs, ok2 := containerStatus(pod, "agent")
	if !ok1 || !ok2 || cs.State.Terminated == nil {
		t.Errorf("turn %s: no Tripped condition (%v) or terminated agent (%v)", turn.GetName(), ok1, ok2)
		return
	}
	gone := cs.State.Terminated.FinishedAt.Sub(cond.LastTransitionTime.Time)
	seen, _ := env.obs.seen(containerDoneKey(pod.Name, "agent"))
	watched, _ := env.obs.seen(podCondKey(pod.Name, protocol.ConditionTripped))
	kind := "loop, degeneration (may end by itself)"
	if stall {
		kind = "stall (the stop path)"
	}
	env.report.sample(fmt.Sprintf("%s, %s: Tripped -> agent process gone (containerd, 1 s steps)", format, kind), gone)
	env.report.sample(fmt.Sprintf("%s, %s: Tripped -> agent terminated seen by a watch", format, kind), seen.Sub(watched))
	t.Logf("turn %s: Tripped -> %s gone in %v (a watch saw it after %v)", turn.GetName(), format, gone, seen.Sub(watched).Round(time.Millisecond))
	if grace := pod.Spec.TerminationGracePeriodSeconds; stall && grace != nil && gone > time.Duration(*grace)*time.Second/2 {
		t.Errorf("turn %s: the stalled %s ran %v after its trip, more than half its grace (%ds): it ignored SIGTERM", turn.GetName(), format, gone, *grace)
	}
}

// checkRealExplain: `kubectl turnwatch explain` tells the tripped run's story
// from the real CLI's stream.
func checkRealExplain(t *testing.T, name string, c realVerdict) {
	t.Helper()
	out := explainOut(t, name)
	wants := []string{fmt.Sprintf("AgentRun %s/%s: Faulted (%s, %s)", env.ns, name, c.class, c.detector)}
	if slices.Contains(linedDetectors, c.detector) {
		wants = append(wants, fmt.Sprintf("TRIPPED %s (%s) at line", c.detector, c.class))
	}
	if c.detector == monitor.DetectorIdenticalCalls {
		wants = append(wants, "(identical x4)")
	}
	if missing, ok := containsAll(string(out), wants...); !ok {
		t.Errorf("kubectl turnwatch explain %s lacks %q:\n%s", name, missing, out)
	}
}

// checkNoneBlind: through the model gateway no turn is blind. codex and
// opencode print whole messages, but the gateway hands the engine the
// model's own deltas (docs/gateway.md#seen-from-the-models-side), so no
// turn says DeltasHidden, on the turn (condition) or the run (Event). A
// stream that hides its deltas, read alone, is test/realcli's.
func checkNoneBlind(t *testing.T, name string, turns []*unstructured.Unstructured) {
	t.Helper()
	for _, turn := range turns {
		conds, _, _ := unstructured.NestedSlice(turn.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "DeltasHidden" && m["status"] == "True" {
				t.Errorf("turn %s: DeltasHidden %q through the gateway\n%s", turn.GetName(), m["message"], describe("agentturn", turn.GetName()))
			}
		}
	}
	if n, _ := runEvents(name, "DeltasHidden"); n != 0 {
		t.Errorf("%d DeltasHidden Events on %s, want none through the gateway", n, name)
	}
}

// checkStreamReadsAsItsFormat: a real agent's stream reads as its run's
// format and reports costs the turn takes as they stand: no turn notes
// FormatMismatch or CostMismatch (docs/design.md#format-mismatch), and no
// Warning Event says so.
func checkStreamReadsAsItsFormat(t *testing.T, name string, turns []*unstructured.Unstructured) {
	t.Helper()
	for _, turn := range turns {
		conds, _, _ := unstructured.NestedSlice(turn.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "FormatMismatch" || m["type"] == "CostMismatch" {
				t.Errorf("turn %s: %s %q", turn.GetName(), m["type"], m["message"])
			}
		}
	}
	for _, reason := range []string{"FormatMismatch", "CostMismatch"} {
		if n, _ := runEvents(name, reason); n != 0 {
			t.Errorf("%d %s Events on %s, want none", n, reason, name)
		}
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

// TestRealAgentsContinue proves spec.sessionStore with each real CLI: three
// runs of one session, each sample as written plus the session, continue
// and the store (a PersistentVolumeClaim bound to a hostPath volume of this
// node). The second run continues the first: the scripted model's first
// request of its turn carries the first run's conversation (the answer the
// first run's tool read). It loops and faults, which bumps the session's
// epoch: the third run, continuing too, starts fresh.
func TestRealAgentsContinue(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	claim := sessionStoreClaim(t)
	files, _ := filepath.Glob(filepath.Join(env.root, "config/samples/cli_*.yaml"))
	ensureAPIKeys(t, files)
	for _, f := range files {
		sample := readSampleRun(t, f)
		format := str(sample, "spec", "format")
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			session := "cont-" + format
			steps := []struct {
				scenario string
				cont     bool
				phase    string
				resumes  bool
			}{
				{"healthy", false, "Succeeded", false},
				{"identicalLoop", true, "Faulted", true},
				{"healthy", true, "Succeeded", false}, // after the fault's epoch bump
			}
			for i, st := range steps {
				sc, _ := scriptedmodel.Lookup(st.scenario)
				model, url := serveModel(t, sc)
				name := fmt.Sprintf("%s-%d", session, i)
				ep := scriptedmodel.Endpoints[format]
				run := sampleOnNode(t, sample, name, url+ep.Suffix, ep.Env, "")
				spec := run.Object["spec"].(map[string]any)
				spec["session"], spec["continue"] = session, st.cont
				spec["sessionStore"] = map[string]any{"claimName": claim}
				if out, err := kubectlApply(t, run); err != nil {
					t.Fatalf("kubectl apply: %v\n%s", err, out)
				}
				waitRun(t, name, 5*time.Minute)
				r, _ := getRun(name)
				turns := turnsOf(name)
				t.Logf("%s (continue %v): %s, turns %s, agent session %s", name, st.cont, str(r, "status", "phase"), fmtTurns(turns),
					str(turns[0], "status", "agentSessionID"))
				if got := str(r, "status", "phase"); got != st.phase {
					t.Fatalf("%s: phase %s, want %s\n%s\n%s", name, got, st.phase, modelLog(model), debugRun(name))
				}
				main := model.Main()
				if len(main) == 0 {
					t.Fatalf("%s never asked the model", name)
				}
				resumed := !main[0].Conversation.Fresh() && main[0].Conversation.Contains("PRETTY_NAME")
				if resumed != st.resumes {
					t.Errorf("%s: the first request resumed the earlier conversation: %v, want %v (turn spec.agentSessionID %q)\n%s",
						name, resumed, st.resumes, str(turns[0], "spec", "agentSessionID"), modelLog(model))
				}
			}
		})
	}
}

// ensureAPIKeys makes sure the dummy agent-api-keys Secret holds the keys
// the samples of files read (tests running at once each add theirs).
func ensureAPIKeys(t *testing.T, files []string) {
	keys := map[string]string{}
	for _, f := range files {
		for _, k := range secretKeys(readSampleRun(t, f)) {
			keys[k] = "scripted"
		}
	}
	secrets := env.kube.CoreV1().Secrets(env.ns)
	_, err := secrets.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-api-keys"}, StringData: keys}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // another test's samples: add these keys to theirs
		patch, _ := json.Marshal(map[string]any{"stringData": keys})
		_, err = secrets.Patch(context.Background(), "agent-api-keys", types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sessionStoreClaim makes a PersistentVolumeClaim bound to a hostPath
// PersistentVolume in a folder of this machine (the node has no storage
// provisioner), removed at the end.
func sessionStoreClaim(t *testing.T) string {
	dir, err := os.MkdirTemp("", "turnwatch-session-store-")
	if err != nil {
		t.Fatal(err)
	}
	pvName := "e2e-session-store-" + env.ns
	const claim = "session-store"
	storage := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: storage, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              "",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: env.ns, Name: claim},
		},
	}
	if _, err := env.kube.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &empty, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: storage},
		},
	}
	if _, err := env.kube.CoreV1().PersistentVolumeClaims(env.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
		if t.Failed() {
			t.Logf("the session store is kept for a look: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return claim
}
