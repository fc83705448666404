//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// TestAttach: Pods turnwatch did not create, guarded where they run
// (docs/attach.md). A namespace labelled turnwatch.dev/attach=enabled; pi's
// sample's pod template, labelled turnwatch.dev/watch=pi, as a Job's, a
// plain Pod's; each against a scripted model playing identicalLoop. The
// admission policy injects the sidecar, the sidecar trips, the manager
// records an AgentTurn of the Pod and ends it as failed; the Job does the
// rest: its backoffLimit rerolls, its podFailurePolicy fails it at once.
// A namespace without the label gets nothing.
func TestAttach(t *testing.T) {
	needOperator(t)
	needAgentImages(t)
	ns := attachNamespace(t, "attach")
	sample := readSampleRun(t, filepath.Join(env.root, "config/samples/cli_pi.yaml"))
	// First and alone (TestAttach is not parallel, so no other test is
	// running): the manager stops while a Pod is created.
	t.Run("manager-down", func(t *testing.T) {
		_, url := loopModel(t)
		tmpl := attachTemplate(t, sample, url)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "while-down", Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		restartManager(t, func() {
			got, err := env.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.InitContainers) == 0 || got.Spec.InitContainers[0].Name != protocol.SidecarContainerName {
				t.Errorf("pod %s created while the manager was down: no sidecar injected", pod.Name)
			}
			if _, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).Get(context.Background(), pod.Name, metav1.GetOptions{}); err == nil {
				t.Errorf("pod %s has a turn with no manager running", pod.Name)
			}
		})
		checkAttachedPod(t, waitPodEnded(t, ns, pod.Name, ""))
	})
	t.Run("overspend", func(t *testing.T) {
		t.Parallel()
		checkAttachedOverspend(t)
	})
	t.Run("gateway", func(t *testing.T) {
		t.Parallel()
		checkAttachedGateway(t, sample)
	})
	t.Run("job-backoff", func(t *testing.T) {
		t.Parallel()
		job := attachJob(t, ns, "loop-backoff", sample, 1, nil)
		checkAttachedJob(t, ns, job, 2, "BackoffLimitExceeded")
	})
	t.Run("job-failjob", func(t *testing.T) {
		t.Parallel()
		job := attachJob(t, ns, "loop-failjob", sample, 3, &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionFailJob,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: protocol.ConditionTripped, Status: corev1.ConditionTrue}},
		}}})
		checkAttachedJob(t, ns, job, 1, "PodFailurePolicy")
	})
	t.Run("cronjob", func(t *testing.T) {
		t.Parallel()
		job := loopJob(t, ns, "loop-cron", sample, 0, nil)
		cron := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "loop-cron", Namespace: ns},
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
				JobTemplate: batchv1.JobTemplateSpec{Spec: job.Spec}},
		}
		if _, err := env.kube.BatchV1().CronJobs(ns).Create(context.Background(), cron, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var made *batchv1.Job
		err := waitFor(context.Background(), 90*time.Second, "the CronJob's first Job", func() (bool, error) {
			list, err := env.kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range list.Items {
				if o := metav1.GetControllerOf(&list.Items[i]); o != nil && o.Kind == "CronJob" && o.Name == cron.Name {
					made = &list.Items[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// One Job is enough; orphaned, or the garbage collector takes it with its CronJob.
		_ = env.kube.BatchV1().CronJobs(ns).Delete(context.Background(), cron.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationOrphan)})
		checkAttachedJob(t, ns, made, 1, "BackoffLimitExceeded")
	})
	t.Run("pod", func(t *testing.T) {
		t.Parallel()
		_, url := loopModel(t)
		tmpl := attachTemplate(t, sample, url)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loop-pod", Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		if _, err := env.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		err := waitFor(context.Background(), 3*time.Minute, "the Pod failed", func() (bool, error) {
			p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
			got = p
			return err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkAttachedPod(t, got)
		bin := needTools(t)
		cmd := exec.Command(filepath.Join(bin, "kubectl"), "turnwatch", "explain", "pod/"+pod.Name, "-n", ns)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.kubeconfig)
		out, err := cmd.CombinedOutput()
		t.Logf("kubectl turnwatch explain pod/%s:\n%s", pod.Name, out)
		if err != nil || !strings.Contains(string(out), "TRIPPED identicalCalls") {
			t.Errorf("explain pod/%s: %v: no TRIPPED identicalCalls", pod.Name, err)
		}
	})
	t.Run("unlabelled", func(t *testing.T) {
		t.Parallel()
		plain := policyNamespace(t, "plain")
		tmpl := attachTemplate(t, sample, "http://127.0.0.1:9")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-attached", Namespace: plain, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		got, err := env.kube.CoreV1().Pods(plain).Create(context.Background(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.InitContainers) != 0 {
			t.Errorf("a Pod of a namespace without %s got %d init containers", "turnwatch.dev/attach", len(got.Spec.InitContainers))
		}
	})
}

// attachTemplate is the sample's pod template as a team would run it
// themselves: labelled for watch, its model the scripted one, its prompt
// its own, no service account token, on the node's network.
func attachTemplate(t *testing.T, sample *unstructured.Unstructured, url string) corev1.PodTemplateSpec {
	t.Helper()
	raw, _, _ := unstructured.NestedMap(sample.Object, "spec", "template")
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	prompt, _, _ := unstructured.NestedString(sample.Object, "spec", "prompt")
	tmpl.Labels = map[string]string{"turnwatch.dev/watch": "pi"}
	spec := &tmpl.Spec
	spec.HostNetwork = true
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.AutomountServiceAccountToken = ptr(false)
	c := &spec.Containers[0]
	var envs []corev1.EnvVar
	for _, e := range c.Env {
		switch e.Name {
		case "ANTHROPIC_BASE_URL":
			e.Value = url
		case "ANTHROPIC_API_KEY":
			e.ValueFrom, e.Value = nil, "sk-attach-dummy"
		}
		envs = append(envs, e)
	}
	c.Env = append(envs, corev1.EnvVar{Name: protocol.EnvPrompt, Value: prompt})
	return tmpl
}

// loopModel serves identicalLoop played as a loop that goes on: 40 calls,
// where the namespace's guard trips at the 4th. (Played to its usual 8, pi
// ends its turn by itself within a second of the trip, before the kubelet
// acts on the stop: an agent that ends by itself with exit 0 leaves its Pod
// Succeeded, whatever the sidecar said. docs/attach.md#stopped.)
func loopModel(t *testing.T) (*scriptedmodel.Server, string) {
	t.Helper()
	sc, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Guards: []byte(`{"identicalCalls":40}`)})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := model.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return model, url + scriptedmodel.Endpoints["pi"].Suffix
}

// attachJob creates a Job of the sample against a scripted model playing
// identicalLoop (loopJob).
func attachJob(t *testing.T, ns, name string, sample *unstructured.Unstructured, backoff int32, pfp *batchv1.PodFailurePolicy) *batchv1.Job {
	t.Helper()
	got, err := env.kube.BatchV1().Jobs(ns).Create(context.Background(), loopJob(t, ns, name, sample, backoff, pfp), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// loopJob is a Job of the sample against a scripted model playing
// identicalLoop (loopModel), not yet created.
func loopJob(t *testing.T, ns, name string, sample *unstructured.Unstructured, backoff int32, pfp *batchv1.PodFailurePolicy) *batchv1.Job {
	t.Helper()
	model, url := loopModel(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(modelLog(model))
		}
	})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{BackoffLimit: ptr(backoff), PodFailurePolicy: pfp,
			Template: attachTemplate(t, sample, url)},
	}
}

// checkAttachedJob: the Job fails for reason, after pods Pods, each
// injected, failed with the Tripped condition and recorded as a Failed
// AgentTurn of its name; a Tripped Event on the Job names the detector.
func checkAttachedJob(t *testing.T, ns string, job *batchv1.Job, pods int, reason string) {
	t.Helper()
	ctx := context.Background()
	err := waitFor(ctx, 5*time.Minute, "job "+job.Name+" failed", func() (bool, error) {
		j, err := env.kube.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				if c.Reason != reason {
					return false, fmt.Errorf("job %s failed for %s (%s), want %s", job.Name, c.Reason, c.Message, reason)
				}
				return true, nil
			}
		}
		return false, nil
	})
	table, _ := kubectl("-n", ns, "get", "jobs,pods,agentturns", "-o", "wide")
	t.Logf("kubectl get jobs,pods,agentturns:\n%s", table)
	if err != nil {
		t.Fatalf("%v\n%s", err, describeIn(ns, "job", job.Name))
	}
	list, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != pods {
		t.Errorf("job %s made %d Pods, want %d", job.Name, len(list.Items), pods)
	}
	for i := range list.Items {
		checkAttachedPod(t, &list.Items[i])
	}
	events, _ := kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Job,involvedObject.name="+job.Name, "-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers")
	if !strings.Contains(events, "Tripped") || !strings.Contains(events, "identicalCalls") {
		t.Errorf("no Tripped Event naming identicalCalls on job %s:\n%s", job.Name, events)
	}
}

// checkAttachedPod: the Pod was injected, failed with the Tripped
// condition, and its AgentTurn recorded it.
func checkAttachedPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != protocol.SidecarContainerName {
		t.Errorf("pod %s: no sidecar injected", p.Name)
	}
	if p.Status.Phase != corev1.PodFailed {
		t.Errorf("pod %s: phase %s, want Failed", p.Name, p.Status.Phase)
	}
	if _, ok := podCondition(p, protocol.ConditionTripped); !ok {
		t.Errorf("pod %s: no %s condition", p.Name, protocol.ConditionTripped)
	}
	turn, err := env.dyn.Resource(agentTurnGVR).Namespace(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("pod %s: no AgentTurn: %v", p.Name, err)
		return
	}
	if got := str(turn, "spec", "podRef", "uid"); got != string(p.UID) {
		t.Errorf("turn %s: spec.podRef.uid %q, want the Pod's %q", turn.GetName(), got, p.UID)
	}
	if str(turn, "status", "outcome") != "Failed" || str(turn, "status", "error", "type") != "runaway" {
		t.Errorf("turn %s: %s %s, want Failed runaway\n%s", turn.GetName(), str(turn, "status", "outcome"), str(turn, "status", "error", "type"),
			describeIn(p.Namespace, "agentturn", p.Name))
	}
}

// checkAttachedOverspend: a Job's Pod that spends past its namespace's
// budget (0.05 USD; the fake agent's overspend stream, as
// TestNamespaceBudget's run) is stopped as overspend mid-turn, the Job
// fails, and the Event on the Job names the budget.
func checkAttachedOverspend(t *testing.T) {
	ns := attachNamespace(t, "attach-budget")
	const policy = "team-budget"
	applyYAML(t, `apiVersion: turnwatch.dev/v1alpha1
kind: TurnPolicy
metadata:
  name: `+policy+`
  namespace: `+ns+`
spec:
  budget:
    maxCostUSD: "0.05"
    window: 1h
`)
	waitLedgerStarted(t, ns, policy)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "spender", Namespace: ns},
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"turnwatch.dev/watch": "pi"}},
			Spec: corev1.PodSpec{HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
				AutomountServiceAccountToken: ptr(false), TerminationGracePeriodSeconds: ptr(int64(5)),
				Containers: []corev1.Container{{Name: "agent", Image: fakeAgentImage, ImagePullPolicy: corev1.PullNever,
					Args: []string{"--scenario", "overspend", "--format", "pi", "--speed", "0.35"}}}},
		}},
	}
	if _, err := env.kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := waitFor(context.Background(), 3*time.Minute, "job spender failed", func() (bool, error) {
		j, err := env.kube.BatchV1().Jobs(ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		return err == nil && j.Status.Failed > 0, nil
	})
	table, _ := kubectl("-n", ns, "get", "jobs,pods,agentturns,turnpolicies", "-o", "wide")
	t.Logf("kubectl get jobs,pods,agentturns,turnpolicies:\n%s", table)
	if err != nil {
		t.Fatal(err)
	}
	list, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=spender"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("job spender's Pods: %v, %d, want one", err, len(list.Items))
	}
	pod := waitPodEnded(t, ns, list.Items[0].Name, "")
	turn, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := [3]string{str(turn, "status", "outcome"), str(turn, "status", "error", "type"), str(turn, "status", "error", "detector")}; e != [3]string{"Failed", string(twv1.ClassOverspend), twv1.DetectorBudget} || pod.Status.Phase != corev1.PodFailed {
		t.Errorf("pod %s %s, turn outcome, error type, detector = %v; want Failed, Failed %s %s\n%s", pod.Name, pod.Status.Phase, e, twv1.ClassOverspend, twv1.DetectorBudget, describeIn(ns, "agentturn", pod.Name))
	}
	if cost := str(turn, "status", "costUSD"); !decimalLess("0.05", cost) || !decimalLess(cost, overspendTotalUSD) {
		t.Errorf("turn %s cost %q; want past the budget (0.05) and short of the whole stream's %s", pod.Name, cost, overspendTotalUSD)
	}
	events, _ := kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Job,involvedObject.name=spender", "-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers")
	t.Logf("events on job spender:\n%s", events)
	if !strings.Contains(events, "Tripped") || !strings.Contains(events, twv1.DetectorBudget) {
		t.Errorf("no Tripped Event naming %s on job spender:\n%s", twv1.DetectorBudget, events)
	}
}

// BenchmarkAttachAdmission: what the admission policy turnwatch-attach adds
// to a Pod's creation on the node's API server, against the same Pod
// without the watch label in the same namespace, side by side: a
// server-side dry run (admission, mutating and validating, without
// storing), one Pod at a time. Reports each one's p50 and p99 and the p99
// added (bound: 5 ms).
//
//	go test -tags e2e ./test/e2e/ -run '^$' -bench BenchmarkAttachAdmission -benchtime 400x
func BenchmarkAttachAdmission(b *testing.B) {
	needOperator(b)
	ns := env.ns + "-attach-bench"
	if _, err := env.kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		if err := runNamespace(ns); err != nil { // the first of the benchmark's runs
			b.Fatal(err)
		}
	}
	if _, err := kubectl("label", "namespace", ns, "--overwrite", "turnwatch.dev/attach=enabled"); err != nil {
		b.Fatal(err)
	}
	if err := waitFor(context.Background(), time.Minute, "the namespace ready", func() (bool, error) {
		_, err := env.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "turnwatch-attach", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	pod := func(watched bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Namespace: ns},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr(false),
				Containers: []corev1.Container{{Name: "agent", Image: "agent-pi:0.73.1"}}}}
		if watched {
			p.Labels = map[string]string{"turnwatch.dev/watch": "pi"}
		}
		return p
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(watched bool) time.Duration {
		start := time.Now()
		got, err := env.kube.CoreV1().Pods(ns).Create(context.Background(), pod(watched), dry)
		el := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if injected := len(got.Spec.InitContainers) > 0; injected != watched {
			b.Fatalf("watched %v: injected %v", watched, injected)
		}
		return el
	}
	for range 20 { // warm both paths
		create(false)
		create(true)
	}
	var plain, attached []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Alternate, so that both see the same server.
		if i%2 == 0 {
			plain = append(plain, create(false))
			attached = append(attached, create(true))
		} else {
			attached = append(attached, create(true))
			plain = append(plain, create(false))
		}
	}
	b.StopTimer()
	p50, p99 := quantiles(plain)
	a50, a99 := quantiles(attached)
	b.ReportMetric(float64(p50.Microseconds())/1000, "plain-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "plain-p99-ms")
	b.ReportMetric(float64(a50.Microseconds())/1000, "attached-p50-ms")
	b.ReportMetric(float64(a99.Microseconds())/1000, "attached-p99-ms")
	b.ReportMetric(float64((a99-p99).Microseconds())/1000, "added-p99-ms")
}

// quantiles are d's p50 and p99.
func quantiles(d []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// checkAttachedGateway: where a TurnPolicy requires the model gateway, a
// Job's Pod (pi's sample, its own key and endpoint in its env) is pointed at
// its sidecar's gateway by turnwatch-attach, which alone holds the key the
// scripted model wants; the loop trips, the gateway holds the next request,
// the Pod fails with the Tripped condition (pi, answered, would have exited
// 0) and the turn is metered from the model's answers.
func checkAttachedGateway(t *testing.T, sample *unstructured.Unstructured) {
	ctx := context.Background()
	ns := attachNamespace(t, "attach-gateway")
	ensureGatewayKey(t, ns)
	sc, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Guards: []byte(`{"identicalCalls":40}`), Key: gatewayKey})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := model.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	applyYAML(t, `apiVersion: turnwatch.dev/v1alpha1
kind: TurnPolicy
metadata:
  name: metered
  namespace: `+ns+`
spec:
  model:
    requireGateway: true
    gateway:
      upstream: `+url+`
      keySecretRef: {name: `+gatewaySecret+`, key: key}
`)
	var token string
	err = waitFor(ctx, time.Minute, "the gateway in the attach parameters", func() (bool, error) {
		cm, err := env.kube.CoreV1().ConfigMaps(ns).Get(ctx, "turnwatch-attach", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		token = cm.Data["modelToken"]
		return token != "" && cm.Data["modelRequired"] == "TurnPolicy/metered", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "metered", Namespace: ns},
		// The template's own endpoint and key go nowhere: the gateway's are
		// the only way to the model.
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: attachTemplate(t, sample, "http://127.0.0.1:9")},
	}
	if _, err := env.kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(modelLog(model))
		}
	})
	checkAttachedJob(t, ns, job, 1, "BackoffLimitExceeded")
	list, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("job %s's Pods: %v, %d, want one", job.Name, err, len(list.Items))
	}
	pod := waitPodEnded(t, ns, list.Items[0].Name, "")
	agent := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		agent[e.Name] = e.Value
	}
	if agent["ANTHROPIC_API_KEY"] != token || agent["ANTHROPIC_BASE_URL"] != "http://127.0.0.1:21000" {
		t.Errorf("pod %s's agent: key %q, endpoint %q; want the namespace's placeholder and the sidecar's gateway", pod.Name, agent["ANTHROPIC_API_KEY"], agent["ANTHROPIC_BASE_URL"])
	}
	turn, err := env.dyn.Resource(agentTurnGVR).Namespace(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl describe agentturn %s:\n%s", pod.Name, describeIn(ns, "agentturn", pod.Name))
	cost, servedUSD := str(turn, "status", "costUSD"), served(model, false).String()
	t.Logf("turn %s: costUSD %s (metered), streamCostUSD %s; the model served %s in %d requests", pod.Name, cost, str(turn, "status", "streamCostUSD"), servedUSD, len(model.Requests()))
	if !decimalLess("0", cost) || decimalLess(servedUSD, cost) {
		t.Errorf("turn %s metered %s: want more than 0 and at most what the model served, %s", pod.Name, cost, servedUSD)
	}
	if n := len(model.Requests()); n >= 40 {
		t.Errorf("the model served %d requests: the loop was not stopped at the gateway", n)
	}
}
