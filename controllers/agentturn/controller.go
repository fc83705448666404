package agentturn

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// AgentTurnReconciler runs one turn: it renders the turn's Pod, reads the
// sidecar's conditions on it, stops the agent on a trip and records the
// turn's outcome. What follows a turn is the AgentRunReconciler's business.
type AgentTurnReconciler struct {
	client.Client
	// APIReader reads around the cache, to tell a Pod that is gone from one
	// the cache has not seen yet.
	APIReader    client.Reader
	Scheme       *runtime.Scheme
	Recorder     events.EventRecorder
	Clock        clock.PassiveClock
	Config       shared.Config
	SidecarImage string
	// LogTail reads the agent's log tail (tail.go); nil reads none.
	LogTail LogTail
	// Manager is the manager's own RBAC subject, named in the sidecar's
	// per-namespace RoleBinding so that LogTail may read there; nil leaves
	// it out (then a tail cannot be read where the manager has no other right).
	Manager *rbacv1.Subject

	written shared.WriteMemo[twv1.AgentTurnStatus]
	stopped shared.WriteMemo[bool]
	// ports are the loopback ports handed out to the Pods that serve their
	// agent's model (model_ports.go).
	ports  modelPorts
	Counts shared.CountsThrottle
}

// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns,verbs=get;list;watch
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns/status,verbs=update
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns/finalizers,verbs=update
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create
// The manager grants the sidecar's rights without holding them: it may bind
// the turnwatch-sidecar ClusterRole, and no other role.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=turnwatch-sidecar

// Reconcile moves one AgentTurn one step on.
func (r *AgentTurnReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	turn := &twv1.AgentTurn{}
	if err := r.Get(ctx, req.NamespacedName, turn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if turn.Spec.PodRef != nil {
		return ctrl.Result{}, nil // an attached Pod's turn: controllers/attach
	}
	if r.written.Stale(turn.UID, turn.Status, r.Clock.Now()) {
		// Our last write is not in the cache yet; its event brings us back.
		return ctrl.Result{RequeueAfter: shared.MemoTTL}, nil
	}
	run := &twv1.AgentRun{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: turn.Namespace, Name: turn.Spec.RunName}, run); err != nil {
		// A turn without its run is garbage collected with it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(turn, run) {
		return ctrl.Result{}, nil
	}
	// The sidecar's latest report, kept for a settle that has no summary
	// (only while the turn runs: settle forgets it, and a settled turn's
	// passes must not bring it back).
	if turn.Status.Outcome == "" {
		r.Counts.Observe(turn.UID, shared.RunProgressFor(run, turn.Name))
	}
	pod := &corev1.Pod{}
	err := r.Get(ctx, types.NamespacedName{Namespace: turn.Namespace, Name: turn.Name}, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil {
		pod = nil
	}
	if turn.Status.Outcome == "" && run.DeletionTimestamp == nil && !run.Spec.Cancel {
		if e := r.budgetStop(ctx, run, turn); e != nil {
			return ctrl.Result{}, r.stopOverBudget(ctx, run, turn, pod, e)
		}
	}
	switch {
	case turn.Status.Outcome != "":
		return r.keepStopped(ctx, run, turn, pod)
	case run.DeletionTimestamp != nil || run.Spec.Cancel:
		return ctrl.Result{}, r.abort(ctx, turn, pod)
	case pod == nil:
		return r.podMissing(ctx, run, turn)
	case !metav1.IsControlledBy(pod, turn):
		return r.podInTheWay(ctx, turn, pod)
	}
	return r.follow(ctx, run, turn, pod)
}

// podInTheWay handles a Pod with the turn's name that the turn did not
// create. A Pod left by an earlier turn of the same name (its run was deleted
// and made again) goes with the garbage collector: wait for it. Any other
// Pod will not go away by itself: the turn fails as infra.
func (r *AgentTurnReconciler) podInTheWay(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	// The Pod's deletion wakes the turn; the deadline bounds the wait.
	if earlierTurnsPod(pod, turn) {
		if left := turn.CreationTimestamp.Add(r.Config.StartTimeout.Duration).Sub(r.Clock.Now()); left > 0 {
			log.FromContext(ctx).Info("waiting for the pod of an earlier turn of this name to go", "pod", pod.Name)
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{}, r.failInfra(ctx, turn, fmt.Sprintf("the pod %s of an earlier turn of this name is still in the way after %s", pod.Name, r.Config.StartTimeout.Duration))
	}
	// Never stopped nor adopted: it is not the turn's.
	return ctrl.Result{}, r.failInfra(ctx, turn, fmt.Sprintf("a pod named %s that turnwatch did not create for this turn is in the way", pod.Name))
}

// follow reads the Pod and records what it says.
func (r *AgentTurnReconciler) follow(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	now := r.Clock.Now()
	agent := render.AgentContainerName(run)
	v := Judge(pod, agent, now, r.Config.SettleGrace.Duration)
	if v.checkTail {
		v = r.checkTail(ctx, run, pod, v, now)
	}
	v = judgeHang(v, pod, agent, now, r.Config.ExitGrace.Duration)
	v = judgeStart(v, pod, agent, startedAt(turn), now, r.Config.StartTimeout.Duration)
	v = holdForAgent(v, pod, agent, now)
	st := turn.Status.DeepCopy()
	RaiseCounts(&r.Counts, turn.UID, st, &v)
	if v.agentSession != "" {
		st.AgentSessionID = v.agentSession
	}
	SetTurnReports(st, v)
	warned := MarkWarnings(st, v.Warnings, turn.Generation, now)
	seen := st.Nudges
	if v.Nudge != "" {
		st.Nudges = max(st.Nudges, int32(protocol.NudgeStreak(v.Nudge)))
	}
	if v.Outcome != "" {
		if v.Outcome == twv1.TurnFailed {
			// Stop first: every second the agent runs on costs money.
			if err := r.stop(ctx, pod); err != nil {
				return ctrl.Result{}, err
			}
		}
		Settle(st, v.Outcome, v.Err, now)
	}
	if wait := HoldCounts(&r.Counts, turn, st, now, shared.TurnRefreshFactor*r.Config.Freshness()); wait > 0 && (v.recheck == 0 || wait < v.recheck) {
		v.recheck = wait
	}
	would := WouldTripDetectors(&turn.Status)
	if err := r.writeStatus(ctx, turn, st); err != nil {
		return ctrl.Result{}, err
	}
	RecordWouldTrips(r.Recorder, run, turn, would)
	RecordNudges(r.Recorder, run, turn, seen, v.Nudge)
	for _, reason := range warned {
		r.Recorder.Eventf(run, turn, corev1.EventTypeWarning, reason, reason, "turn %s: %s", turn.Name, v.Warnings[reason])
		shared.WarningsTotal.WithLabelValues(reason, shared.DrillLabel(turn.Labels)).Inc()
	}
	if v.Outcome != "" {
		r.recordSettled(ctx, turn, v.tripped)
		r.recordAgentEnd(ctx, run, turn, pod, agent, v.tripped)
	}
	return ctrl.Result{RequeueAfter: v.recheck}, nil
}

// podMissing creates the turn's Pod, or settles the turn as infra when the
// Pod it created is gone.
func (r *AgentTurnReconciler) podMissing(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn) (ctrl.Result, error) {
	if turn.Status.PodName != "" {
		found := &corev1.Pod{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: turn.Namespace, Name: turn.Status.PodName}, found)
		if err == nil {
			return r.podUncached(ctx, turn, found)
		}
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.failInfra(ctx, turn, "the pod was deleted before the turn ended")
	}
	if err := ensureSidecarRBAC(ctx, r.Client, r.APIReader, turn.Namespace, r.Manager); err != nil {
		return ctrl.Result{}, fmt.Errorf("sidecar RBAC: %w", err)
	}
	prompt, err := shared.PromptOfTurn(ctx, r.APIReader, turn)
	if err != nil {
		return ctrl.Result{}, err
	}
	turn.Spec.Prompt = prompt // the cache does not keep it (shared/cache_trim.go)
	policies, err := turnpolicy.PoliciesFor(ctx, r.Client, turn.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	o := render.RenderOptions{SidecarImage: r.SidecarImage, Guards: r.Config.Guards, Prices: r.Config.Prices,
		Resources: r.Config.Sidecar.Resources, Freshness: r.Config.Freshness(), Policies: policies}
	if err := r.modelOptions(ctx, run, turn, &o); err != nil {
		return ctrl.Result{}, err
	}
	if o.PodSecurity, err = podSecurityFor(ctx, r.Client, turn.Namespace); err != nil {
		return ctrl.Result{}, fmt.Errorf("pod security: %w", err)
	}
	pod, err := render.RenderPod(run, turn, o)
	var refused *render.TemplateRefusedError
	if errors.As(err, &refused) {
		return ctrl.Result{}, r.refuseTemplate(ctx, turn, refused)
	}
	var drillRefused *turnpolicy.DrillRefusedError
	if errors.As(err, &drillRefused) {
		return ctrl.Result{}, r.failInfra(ctx, turn, drillRefused.Error())
	}
	var guardsRefused *turnpolicy.GuardsRefusedError
	if errors.As(err, &guardsRefused) {
		return ctrl.Result{}, r.failInfra(ctx, turn, guardsRefused.Error())
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := controllerutil.SetControllerReference(turn, pod, r.Scheme); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Create(ctx, pod); err != nil {
		return r.createRefused(ctx, turn, pod.Name, err)
	}
	r.graceRaised(run, turn, pod)
	r.guardsCapped(run, turn, pod, policies)
	return ctrl.Result{}, r.recordPod(ctx, turn, pod.Name)
}

// abort stops the agent of a cancelled or deleted run and records the turn
// as Aborted: stopped by the user, never Failed.
func (r *AgentTurnReconciler) abort(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) error {
	if err := r.stopAndSettle(ctx, turn, pod, twv1.TurnAborted, nil); err != nil {
		return err
	}
	shared.TurnsTotal.WithLabelValues(string(twv1.TurnAborted), "", shared.DrillLabel(turn.Labels), shared.AttachedLabel(turn)).Inc()
	return nil
}

// stopAndSettle stops the turn's agent, when its Pod is the turn's, and
// records the outcome the controller decided (an abort, a spent budget).
func (r *AgentTurnReconciler) stopAndSettle(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod, outcome twv1.TurnOutcome, e *twv1.TurnError) error {
	if pod != nil && metav1.IsControlledBy(pod, turn) {
		if err := r.stop(ctx, pod); err != nil {
			return err
		}
	}
	st := turn.Status.DeepCopy()
	Settle(st, outcome, e, r.Clock.Now())
	return r.writeStatus(ctx, turn, st)
}

// keepStopped makes sure a settled, unsuccessful turn's Pod is stopped (a
// previous pass may have recorded the outcome and then died), and that a
// succeeded turn's agent does not run on past exitGrace. A Pod the turn
// does not control is never touched.
func (r *AgentTurnReconciler) keepStopped(ctx context.Context, run *twv1.AgentRun, turn *twv1.AgentTurn, pod *corev1.Pod) (ctrl.Result, error) {
	if pod == nil || !metav1.IsControlledBy(pod, turn) {
		return ctrl.Result{}, nil
	}
	if err := r.lateReports(ctx, run, turn, pod); err != nil {
		return ctrl.Result{}, err
	}
	if turn.Status.Outcome == twv1.TurnSucceeded {
		return r.stopHung(ctx, run, turn, pod)
	}
	return ctrl.Result{}, r.stop(ctx, pod)
}

// stop ends the agent and keeps the Pod: an active deadline of one second
// makes the kubelet kill the containers; the Pod object and its logs stay for
// inspection until the run is deleted.
func (r *AgentTurnReconciler) stop(ctx context.Context, pod *corev1.Pod) error {
	stopped := isStopped(pod)
	if r.stopped.Stale(pod.UID, stopped, r.Clock.Now()) || stopped || shared.PodTerminal(pod) {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`))
	if err := r.Patch(ctx, pod, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.stopped.Wrote(pod.UID, true, r.Clock.Now())
	log.FromContext(ctx).Info("stopped agent", "pod", pod.Name)
	return nil
}

// Settle records the turn's outcome, its error and its completion time.
func Settle(st *twv1.AgentTurnStatus, outcome twv1.TurnOutcome, e *twv1.TurnError, now time.Time) {
	st.Outcome, st.Error = outcome, e
	st.CompletionTime = shared.PtrTime(metav1.NewTime(now))
}

// failInfra settles the turn as infra with msg.
func (r *AgentTurnReconciler) failInfra(ctx context.Context, turn *twv1.AgentTurn, msg string) error {
	st := turn.Status.DeepCopy()
	Settle(st, twv1.TurnFailed, &twv1.TurnError{Type: twv1.ClassInfra, Message: msg}, r.Clock.Now())
	if err := r.writeStatus(ctx, turn, st); err != nil {
		return err
	}
	r.recordSettled(ctx, turn, false)
	return nil
}

// writeStatus writes st if it differs; the update is guarded by the
// resourceVersion read, so a stale pass fails instead of overwriting.
func (r *AgentTurnReconciler) writeStatus(ctx context.Context, turn *twv1.AgentTurn, st *twv1.AgentTurnStatus) error {
	if st.Outcome != "" {
		r.Counts.Settle(turn.UID, st) // the counts held back while it ran (shared/status_freshness.go)
	}
	if equality.Semantic.DeepEqual(*st, turn.Status) {
		return nil
	}
	turn.Status = *st
	if err := r.Status().Update(ctx, turn); err != nil {
		return err
	}
	r.written.Wrote(turn.UID, turn.Status, r.Clock.Now())
	return nil
}

func (r *AgentTurnReconciler) recordSettled(ctx context.Context, turn *twv1.AgentTurn, tripped bool) {
	st := &turn.Status
	shared.RecordSettled(turn, tripped)
	log.FromContext(ctx).Info("turn settled", "outcome", st.Outcome, "class", agentrun.ErrorType(turn), "steps", st.Steps, "costUSD", st.CostUSD)
}

// runChanged passes AgentRun updates a turn cares about: a spec change
// (cancel) or the start of deletion, not the run's own status writes.
var runChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SetupWithManager registers the controller: it follows AgentTurns, their
// Pods, and the cancel or deletion of their runs.
func (r *AgentTurnReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.AgentTurn{}).
		Owns(&corev1.Pod{}).
		Watches(&twv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.turnsOfRun), builder.WithPredicates(runChanged)).
		Watches(&twv1.TurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.runningTurns), builder.WithPredicates(BudgetNowExhausted)).
		Watches(&twv1.ClusterTurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.runningTurns), builder.WithPredicates(BudgetNowExhausted)).
		Named("agentturn").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, concurrency)}).
		Complete(r)
}

func (r *AgentTurnReconciler) turnsOfRun(ctx context.Context, obj client.Object) []reconcile.Request {
	var list twv1.AgentTurnList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{shared.IndexOwnerUID: string(obj.GetUID())}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
	}
	return reqs
}
