//go:build e2e

package e2e

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"turnwatch.dev/turnwatch/internal/testenv"
)

var (
	agentRunGVR  = schema.GroupVersionResource{Group: "turnwatch.dev", Version: "v1alpha1", Resource: "agentruns"}
	agentTurnGVR = schema.GroupVersionResource{Group: "turnwatch.dev", Version: "v1alpha1", Resource: "agentturns"}
)

// observer watches the test namespace and records when each fact was first
// seen: a Pod condition, a terminated container, a turn outcome. The latency
// measurements compare these times with the log timestamps of the agent's
// lines; both come from this machine's clock.
type observer struct {
	mu    sync.Mutex
	first map[string]time.Time
	pods  cache.SharedIndexInformer
	turns cache.GenericLister
	runs  cache.GenericLister
	wake  chan struct{}
}

func newObserver() *observer {
	return &observer{first: map[string]time.Time{}, wake: make(chan struct{})}
}

// Keys of the facts the observer records.
func podCondKey(pod, typ string) string      { return "pod/" + pod + "/condition/" + typ }
func containerDoneKey(pod, c string) string  { return "pod/" + pod + "/terminated/" + c }
func turnOutcomeKey(turn, out string) string { return "turn/" + turn + "/outcome/" + out }

func (o *observer) see(key string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.first[key]; !ok {
		o.first[key] = at
	}
	close(o.wake)
	o.wake = make(chan struct{})
}

// seen returns when key was first observed.
func (o *observer) seen(key string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.first[key]
	return t, ok
}

// changed returns a channel closed at the next observation.
func (o *observer) changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.wake
}

func (o *observer) start(ctx context.Context, ns string) {
	f := informers.NewSharedInformerFactoryWithOptions(env.kube, 0, informers.WithNamespace(ns))
	o.pods = f.Core().V1().Pods().Informer()
	_, _ = o.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.pod(obj) },
		UpdateFunc: func(_, obj any) { o.pod(obj) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

// startTurnwatch watches AgentTurns and AgentRuns; call it once the CRDs exist.
func (o *observer) startTurnwatch(ctx context.Context, ns string) {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(env.dyn, 0, ns, nil)
	turns := f.ForResource(agentTurnGVR)
	_, _ = turns.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.turn(obj) },
		UpdateFunc: func(_, obj any) { o.turn(obj) },
	})
	runs := f.ForResource(agentRunGVR)
	_, _ = runs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { o.see("", time.Now()) },
		UpdateFunc: func(_, _ any) { o.see("", time.Now()) },
	})
	o.turns, o.runs = turns.Lister(), runs.Lister()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

func (o *observer) pod(obj any) {
	now := time.Now()
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			o.see(podCondKey(p.Name, string(c.Type)), now)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		if cs.State.Terminated != nil {
			o.see(containerDoneKey(p.Name, cs.Name), now)
		}
	}
	o.see("", now)
}

func (o *observer) turn(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if out, _, _ := unstructured.NestedString(u.Object, "status", "outcome"); out != "" {
		o.see(turnOutcomeKey(u.GetName(), out), now)
	}
	o.see("", now)
}

// waitFor polls cond at every observation (and every second) until it
// returns true, an error, or the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return testenv.WaitFor(ctx, timeout, time.Second, what, env.obs.changed, cond)
}

// podOf returns the Pod with the given name from the informer's cache.
func podOf(name string) (*corev1.Pod, bool) {
	obj, ok, _ := env.obs.pods.GetStore().GetByKey(env.ns + "/" + name)
	if !ok {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

// podCondition returns the Pod's condition of the given type.
func podCondition(p *corev1.Pod, typ string) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if string(c.Type) == typ {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func containerStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}
