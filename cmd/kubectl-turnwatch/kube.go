package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/explain"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func contextNamespace(ns string) clientcmdapi.Context { return clientcmdapi.Context{Namespace: ns} }

// explainRun reads the run, its turns, and the chosen turn's agent log.
func explainRun(ctx context.Context, cfg *rest.Config, ns, name, pick string, gap time.Duration) (*explain.Run, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	var run twv1.AgentRun
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
		return nil, err
	}
	var list twv1.AgentTurnList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{twv1.LabelRun: name}); err != nil {
		return nil, err
	}
	r := &explain.Run{Namespace: ns, Name: name, Phase: string(run.Status.Phase), Turns: turnsOf(&run, list.Items), Drill: drillOf(&run)}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	addNotes(ctx, cs, ns, []types.UID{run.UID}, list.Items, r.Turns)
	if f := run.Status.Fault; f != nil {
		r.Fault = &explain.Turn{Name: f.Turn, Class: string(f.Class), Detector: f.Detector, Message: f.Message}
	}
	turn, ok := chooseTurn(r, pick)
	if !ok {
		if pick != "" {
			return nil, fmt.Errorf("AgentRun %s/%s has no turn %q", ns, name, pick)
		}
		return r, nil // no turn yet
	}
	r.StreamTurn = turn.Name
	r.Stream, err = turnStream(ctx, c, cs, ns, turn, func(pod *corev1.Pod) (explain.Options, string, error) {
		return sidecarOptions(pod, string(run.Spec.Format))
	}, gap)
	if err != nil {
		r.StreamError = err.Error()
	}
	return r, nil
}

// newClient is a client of the core API and turnwatch's.
func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := twv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// addNotes gives each turn what it told besides its outcome: its Nudged
// Events on regarding (the run; an attached turn, or its Pod), oldest
// first, in the sidecar's words (which say whether the nudge was delivered
// to the agent), then the turn's notes (noteConditions). Events a user may
// not list are left out.
func addNotes(ctx context.Context, cs kubernetes.Interface, ns string, regarding []types.UID, items []twv1.AgentTurn, turns []explain.Turn) {
	byTurn := map[string][]string{}
	if evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		sort.SliceStable(evs.Items, func(i, j int) bool { return evs.Items[i].EventTime.Before(&evs.Items[j].EventTime) })
		for _, ev := range evs.Items {
			if slices.Contains(regarding, ev.Regarding.UID) && ev.Reason == "Nudged" && ev.Related != nil {
				byTurn[ev.Related.Name] = append(byTurn[ev.Related.Name], strings.TrimPrefix(ev.Note, "turn "+ev.Related.Name+": "))
			}
		}
	}
	for _, at := range items {
		for _, cond := range noteConditions() {
			if c := meta.FindStatusCondition(at.Status.Conditions, cond); c != nil && c.Status == metav1.ConditionTrue {
				byTurn[at.Name] = append(byTurn[at.Name], cond+": "+c.Message)
			}
		}
	}
	for i := range turns {
		turns[i].Notes = byTurn[turns[i].Name]
	}
}

// noteConditions are the turn conditions explain shows under the turn:
// the sidecar's warnings (protocol.Warnings), then Forgeable, an attached
// Pod's agent that could write its own verdict (docs/attach.md#forgeable).
func noteConditions() []string {
	var out []string
	for _, w := range protocol.Warnings {
		out = append(out, w.Reason)
	}
	return append(out, twv1.TurnConditionForgeable)
}

// turnsOf merges the run's status list (deleted turns included) with the
// AgentTurns (their error and Pod).
func turnsOf(run *twv1.AgentRun, items []twv1.AgentTurn) []explain.Turn {
	byName := map[string]*twv1.AgentTurn{}
	for i := range items {
		byName[items[i].Name] = &items[i]
	}
	seen := map[string]bool{}
	var out []explain.Turn
	add := func(t explain.Turn) {
		if at := byName[t.Name]; at != nil {
			fillTurn(&t, at)
			t.Pod = at.Status.PodName
			if t.Pod == "" {
				t.Pod = at.Name
			}
		}
		// A running turn's counts are its sidecar's latest report, which
		// goes to the run's status.progress, not to the AgentTurn.
		if p := run.Status.Progress; t.Outcome == "" && p != nil && p.Turn == t.Name && p.Steps >= t.Steps {
			t.Steps, t.CostUSD = p.Steps, p.CostUSD
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	for _, ref := range run.Status.Turns {
		add(explain.Turn{Name: ref.Name, Attempt: ref.Attempt, Outcome: string(ref.Outcome), Class: string(ref.ErrorType),
			Steps: ref.Steps, CostUSD: ref.CostUSD})
	}
	for _, at := range items {
		if !seen[at.Name] {
			add(explain.Turn{Name: at.Name, Attempt: at.Spec.Attempt})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out
}

// fillTurn sets the turn's outcome, counts and error from its AgentTurn.
func fillTurn(t *explain.Turn, at *twv1.AgentTurn) {
	t.Outcome = string(at.Status.Outcome)
	t.Steps, t.CostUSD = at.Status.Steps, at.Status.CostUSD
	if e := at.Status.Error; e != nil {
		t.Class, t.Detector, t.Message = string(e.Type), e.Detector, e.Message
	}
}

// chooseTurn: the one asked for (name or attempt), else the faulted one,
// else the last.
func chooseTurn(r *explain.Run, pick string) (explain.Turn, bool) {
	if len(r.Turns) == 0 {
		return explain.Turn{}, false
	}
	want := pick
	if want == "" && r.Fault != nil {
		want = r.Fault.Name
	}
	if want == "" {
		return r.Turns[len(r.Turns)-1], true
	}
	for _, t := range r.Turns {
		if t.Name == want || strconv.Itoa(int(t.Attempt)) == want {
			return t, true
		}
	}
	if pick == "" {
		return r.Turns[len(r.Turns)-1], true
	}
	return explain.Turn{}, false
}

// turnStream reads the turn's agent log (with timestamps, so gaps show) and
// explains it with the format, guards and prices its sidecar was given:
// options reads them, and the agent container, off its Pod.
func turnStream(ctx context.Context, c client.Client, cs kubernetes.Interface, ns string, turn explain.Turn,
	options func(*corev1.Pod) (explain.Options, string, error), gap time.Duration) (*explain.Timeline, error) {
	if turn.Pod == "" {
		return nil, fmt.Errorf("the turn is gone (deleted), and with it its Pod")
	}
	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: turn.Pod}, &pod); err != nil {
		return nil, fmt.Errorf("its Pod %s: %w", turn.Pod, err)
	}
	opts, container, err := options(&pod)
	if err != nil {
		return nil, err
	}
	opts.GapAtLeast = gap
	logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, Timestamps: true}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("the log of %s in Pod %s: %w", container, pod.Name, err)
	}
	defer logs.Close()
	return explain.Stream(logs, opts)
}

// sidecarOptions are the engine options the manager gave the turn's sidecar
// (its env), and the agent container it followed.
func sidecarOptions(pod *corev1.Pod, format string) (explain.Options, string, error) {
	opts := explain.Options{Format: format}
	container := "agent"
	env := sidecarEnv(pod)
	for _, e := range env {
		var err error
		switch e.Name {
		case protocol.EnvFormat:
			opts.Format = e.Value
		case protocol.EnvAgentContainer:
			container = e.Value
		case protocol.EnvPriorCostUSD:
			opts.PriorCostUSD = e.Value
		case protocol.EnvAudit:
			opts.Audit = protocol.ParseAudit(e.Value)
			err = monitor.ValidateAudit(opts.Audit)
		case protocol.EnvPrices:
			opts.Prices, err = monitor.ParsePrices([]byte(e.Value))
		}
		if err != nil {
			return opts, "", fmt.Errorf("the sidecar's %s: %w", e.Name, err)
		}
	}
	if guards, ok := sidecarGuards(env); ok {
		var err error
		if opts.Guards, err = monitor.ParseGuards(guards); err != nil {
			return opts, "", fmt.Errorf("the sidecar's %s: %w", protocol.EnvGuards, err)
		}
	}
	return opts, container, nil
}

// sidecarEnv is the env of the Pod's sidecar container.
func sidecarEnv(pod *corev1.Pod) []corev1.EnvVar {
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if c.Name == protocol.SidecarContainerName {
			return c.Env
		}
	}
	return nil
}

// sidecarGuards are the guards the sidecar ran with, as it reads them
// (turnwatch-sidecar run): its guards, and an attached Pod's guards
// annotation over them, capped to the limits (monitor.OverrideGuards; an
// annotation that does not read leaves the guards as they are). ok is
// false when the env sets none of the three.
func sidecarGuards(env []corev1.EnvVar) (guards []byte, ok bool) {
	var override, limits []byte
	for _, e := range env {
		switch e.Name {
		case protocol.EnvGuards:
			guards, ok = []byte(e.Value), true
		case protocol.EnvGuardsOverride:
			override, ok = []byte(e.Value), true
		case protocol.EnvGuardLimits:
			limits, ok = []byte(e.Value), true
		}
	}
	if len(bytes.TrimSpace(override)) == 0 && len(bytes.TrimSpace(limits)) == 0 {
		return guards, ok
	}
	guards, _, _ = monitor.OverrideGuards(guards, override, limits)
	return guards, ok
}
