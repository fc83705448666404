//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
	"turnwatch.dev/turnwatch/test/internal/proc"
)

// The model gateway on the node (docs/gateway.md): TestRealAgents runs
// every real CLI through it (withGateway), its scripted model wanting the
// key only the gateway holds; this file has what that run checks, and the
// test that looks for the key where the agent and `kubectl` could see it.

// gatewayKey is the upstream's key in the tests: in the Secret the
// gateway's keySecretRef names, and nowhere else.
const gatewayKey = "sk-e2e-upstream-7f3c9a1d52e8b604"

// gatewaySecret is the Secret holding gatewayKey, under the key "key".
const gatewaySecret = "model-gateway-key"

// ensureGatewayKey makes the Secret of gatewayKey in ns.
func ensureGatewayKey(t *testing.T, ns string) {
	t.Helper()
	_, err := env.kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: gatewaySecret}, StringData: map[string]string{"key": gatewayKey}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// withGateway puts the model gateway in front of the run's model: the
// upstream is the scripted model's root (the agent's paths carry /v1).
func withGateway(run *unstructured.Unstructured, upstream string) {
	_ = unstructured.SetNestedMap(run.Object, map[string]any{
		"upstream":     upstream,
		"keySecretRef": map[string]any{"name": gatewaySecret, "key": "key"},
	}, "spec", "model", "gateway")
}

// served is what the model's answers reported as used, at the cluster's
// default prices: what the gateway must meter. whole leaves out an answer
// its CLI asked for again (a later main request at the same place in the
// conversation): the CLI dropped it, maybe before the gateway read its
// usage (codex under load drops a stream after a nudge and asks again).
func served(model *scriptedmodel.Server, whole bool) monitor.Money {
	prices := monitor.DefaultPrices()
	reqs := model.Requests()
	var sum monitor.Money
	for i, q := range reqs {
		if whole && askedAgain(q, reqs[i+1:]) {
			continue
		}
		sum = sum.Add(prices.Price(q.Model, monitor.Usage{Input: int64(q.Input), Output: int64(q.Output)}))
	}
	return sum
}

// askedAgain says whether a main request of later asks what q asked.
func askedAgain(q scriptedmodel.Request, later []scriptedmodel.Request) bool {
	return !q.Side && slices.ContainsFunc(later, func(l scriptedmodel.Request) bool {
		return !l.Side && l.Path == q.Path && l.Step == q.Step && l.Messages == q.Messages && l.Prompts == q.Prompts
	})
}

// checkMetered: the run costs what the gateway metered, the model's own
// figures at the prices, whatever the CLI printed, which each turn keeps
// beside it (status.streamCostUSD). A run that ended by itself was metered
// whole; a stopped one up to its trip (answers after it are paid, not
// judged: at most what was served). A stalled answer never ended: what was
// served of it is the scripted model's word, not an answer the gateway read.
func checkMetered(t *testing.T, name, scenario string, r *unstructured.Unstructured, turns []*unstructured.Unstructured, model *scriptedmodel.Server) {
	t.Helper()
	cost, err := monitor.ParseMoney(str(r, "status", "costUSD"))
	want, all := served(model, true), served(model, false)
	switch {
	case err != nil:
		t.Errorf("%s: status.costUSD %q: %v", name, str(r, "status", "costUSD"), err)
	case scenario == "stall":
	case cost <= 0:
		t.Errorf("%s: status.costUSD %q: the gateway metered nothing", name, str(r, "status", "costUSD"))
	case str(r, "status", "phase") == "Succeeded" && cost < want-want/50:
		// Exact in test/realcli; here a CLI may leave a last side answer
		// (a title) at its exit, whose usage the scripted model logged as
		// planned, not as sent.
		t.Errorf("%s: status.costUSD %s, want %s less at most 2%%: the model's usage at the prices\n%s", name, cost, want, modelLog(model))
	case cost > all:
		t.Errorf("%s: status.costUSD %s is more than the model served (%s)\n%s", name, cost, all, modelLog(model))
	}
	for _, turn := range turns {
		// A stopped turn's stream may have priced nothing yet (codex and
		// gemini report tokens only at their turn's end); a finished one did.
		if str(turn, "status", "outcome") == "Succeeded" && str(turn, "status", "streamCostUSD") == "" {
			t.Errorf("turn %s: no status.streamCostUSD beside the metered cost", turn.GetName())
		}
	}
	t.Logf("%s: metered %s, served %s (%s with the answers asked again); stream %s", name, cost, want, all, streamCosts(turns))
}

func streamCosts(turns []*unstructured.Unstructured) string {
	var out []string
	for _, turn := range turns {
		out = append(out, str(turn, "status", "streamCostUSD"))
	}
	return strings.Join(out, ", ")
}

// checkEndedByItself: after a loop's trip the gateway refused the CLI's
// next request, and each tripped turn's CLI ended by itself within 2 s of
// the trip (containerd's finishedAt against the Tripped condition, both
// whole seconds): before the controller's ModelTripGrace, so no signal was
// sent. The Events say which (AgentEnded, AgentStopped); the kubelet may
// report an exit late, so they are logged, not judged.
func checkEndedByItself(t *testing.T, name string, turns []*unstructured.Unstructured) {
	t.Helper()
	for _, turn := range turns {
		pod, ok := podOfTurn(name, turn)
		if !ok {
			continue
		}
		cond, ok1 := podCondition(pod, protocol.ConditionTripped)
		cs, ok2 := containerStatus(pod, "agent")
		if !ok1 || !ok2 || cs.State.Terminated == nil {
			continue // measureRealStop said why
		}
		if gone := cs.State.Terminated.FinishedAt.Sub(cond.LastTransitionTime.Time); gone > 2*time.Second {
			t.Errorf("turn %s: the CLI was gone %v after the trip, want within 2 s: it did not end at the refused request", turn.GetName(), gone)
		}
	}
	ended, msgs := runEvents(name, "AgentEnded")
	stopped, smsgs := runEvents(name, "AgentStopped")
	t.Logf("%s: %d AgentEnded %q, %d AgentStopped %q", name, ended, msgs, stopped, smsgs)
}

// TestGatewayKeyHidden: with the gateway, the upstream's key is in the
// sidecar's Secret volume and nowhere the agent or a reader of the run
// sees it: not in the agent container's env, its processes' environ or
// command lines, its mounts, nor in kubectl get -o yaml or describe of the
// run, the turn and the Pod.
func TestGatewayKeyHidden(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	t.Parallel()
	ensureGatewayKey(t, env.ns)
	sc, _ := scriptedmodel.Lookup("healthy")
	_, url := serveModelWithKey(t, sc, gatewayKey)
	name := "gateway-key-hidden"
	run := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"turnwatch.dev/v1alpha1","kind":"AgentRun",
		"metadata":{"name":"`+name+`","namespace":"`+env.ns+`"},
		"spec":{"format":"claude","prompt":"wait",
		 "template":{"spec":{"hostNetwork":true,"containers":[{"name":"agent","image":"agent-claude:2.1.328",
		  "command":["sh","-c","sleep 20; echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}'"],
		  "env":[{"name":"ANTHROPIC_API_KEY","value":"not-the-key"}]}]}}}}`), &run.Object); err != nil {
		t.Fatal(err)
	}
	withGateway(run, url)
	if out, err := kubectlApply(t, run); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pod := waitPodOfRun(t, name)
	out, err := kubectl("-n", env.ns, "exec", pod, "-c", "agent", "--", "sh", "-c",
		"env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'; cat /proc/self/mountinfo; ls -laR /var/run /run 2>/dev/null; exit 0")
	if err != nil {
		t.Fatalf("kubectl exec: %v\n%s", err, out)
	}
	if strings.Contains(out, gatewayKey) || strings.Contains(out, "model-key") {
		t.Errorf("the agent container sees the key or its volume:\n%s", out)
	}
	if !strings.Contains(out, "ANTHROPIC_API_KEY=turnwatch-placeholder-") || !strings.Contains(out, "ANTHROPIC_BASE_URL=http://127.0.0.1:") {
		t.Errorf("the agent was not pointed at the gateway with a placeholder:\n%s", out)
	}
	waitRun(t, name, 2*time.Minute)
	for _, args := range [][]string{
		{"get", "agentrun,agentturn,pod", "-o", "yaml"}, {"describe", "agentrun", name},
		{"describe", "agentturn"}, {"describe", "pod", pod},
	} {
		out, err := kubectl(append([]string{"-n", env.ns}, args...)...)
		if err != nil || strings.Contains(out, gatewayKey) {
			t.Errorf("kubectl %s shows the key (or failed: %v)", strings.Join(args, " "), err)
		}
	}
}

// sidecarPeak follows the sidecar of pod through its life and returns a
// func that stops and gives its peak resident set (VmHWM, KiB; 0 if it
// was never seen): the gateway's cost in the real sidecar, under a real
// CLI's traffic.
func sidecarPeak(pod string) func() int64 {
	done, out := make(chan struct{}), make(chan int64, 1)
	go func() {
		var peak int64
		pid := 0
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				out <- peak
				return
			case <-tick.C:
			}
			if pid == 0 {
				pid = sidecarPID(pod)
				continue
			}
			if _, hwm, ok := proc.RSS(pid); ok {
				peak = max(peak, hwm)
			}
		}
	}()
	return func() int64 { close(done); return <-out }
}
