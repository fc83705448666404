package agentrun

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/render"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Event reasons on an AgentRun.
const (
	EventRerolled = "Rerolled" // a failed turn is tried again as a fresh conversation
	EventFaulted  = "Faulted"  // the run ended with a terminal fault
	EventNudged   = "Nudged"   // the silent-run nudge fired in a turn
	// eventDeltasHidden: a turn's stream hides the model's deltas (a Warning, once per turn).
	eventDeltasHidden = protocol.ReasonDeltasHidden
	// eventHooksNotRun: a turn that delivers nudges ran tool calls and no
	// turnwatch hook ran (a Warning, once per turn).
	eventHooksNotRun = protocol.ReasonHooksNotRun
	// eventLogRotated: a turn's sidecar lagged past a log rotation, and
	// lines may have been rotated away unread (a Warning, once per turn).
	eventLogRotated = protocol.ReasonLogRotated
	eventSucceeded  = "Succeeded" // a turn finished with a final result
	eventAborted    = "Aborted"   // the run was cancelled or deleted
	// EventDrill prefixes a drill's result (docs/drill.md#results):
	// DrillCaught, DrillCaughtOtherwise, DrillAsExpected (Normal),
	// DrillMissed, DrillFalseAlarm (Warning).
	EventDrill = "Drill"
)

// AgentRunReconciler turns an AgentRun into AgentTurns: the first one, a
// reroll after a failure where the policy allows, and the run's status.
type AgentRunReconciler struct {
	client.Client
	// APIReader reads around the cache, to tell a deleted turn from one the
	// cache has not seen yet.
	APIReader client.Reader

	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	Config   shared.Config

	written shared.WriteMemo[twv1.AgentRunStatus]
}

// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentruns,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentruns/status,verbs=update
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one AgentRun one step on.
func (r *AgentRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &twv1.AgentRun{}
	if err := r.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			ForgetLagMetric(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	SetLagMetric(run)
	if r.written.Stale(run.UID, shared.MemoStatus(run.Status), r.Clock.Now()) {
		// Our last status write is not in the cache yet; its event brings us back.
		return ctrl.Result{RequeueAfter: shared.MemoTTL}, nil
	}
	if run.DeletionTimestamp == nil {
		if err := r.ensureMeta(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
	}
	if shared.Finished(run.Status.Phase) {
		return r.holdFinished(ctx, run)
	}
	turns, err := r.turnsOf(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	if turns, err = r.withGone(ctx, run, turns); err != nil {
		return ctrl.Result{}, err
	}
	turns = r.withLiveCounts(ctx, run, turns)
	d := decide(run, turns, runPolicy(r.Config.Rerolls, run))
	if d, err = r.queue(ctx, run, d); err != nil {
		return ctrl.Result{}, err
	}
	if d, err = r.HoldForBudget(ctx, run, d); err != nil {
		return ctrl.Result{}, err
	}
	if d.Step == StepCreate {
		turn, created, err := r.createTurn(ctx, run, turns, d.attempt)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !created {
			// The turn exists but the cache has not shown it yet; its
			// creation event brings us back.
			return ctrl.Result{}, nil
		}
		// The Rerolled Event goes with the status write that records the
		// turn (writeStatus), so a restart right here does not lose it.
		turns = append(turns, *turn)
		d = Decision{Step: stepWait, last: turn}
	}
	if err := r.writeStatus(ctx, run, turns, d); err != nil {
		// A conflict is most often a sidecar's progress report landing
		// first (shared/status_freshness.go): that change's own event brings the run
		// back, so the pass ends quietly.
		return ctrl.Result{}, shared.IgnoreConflict(err)
	}
	if run.DeletionTimestamp != nil && d.Step != stepWait {
		return ctrl.Result{}, r.release(ctx, run)
	}
	return r.expire(ctx, run)
}

// expire deletes a finished run whose ttlSecondsAfterFinished has passed, or
// says when to look again.
func (r *AgentRunReconciler) expire(ctx context.Context, run *twv1.AgentRun) (ctrl.Result, error) {
	ttl, done := run.Spec.TTLSecondsAfterFinished, run.Status.CompletionTime
	if ttl == nil || done == nil || run.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	left := done.Add(time.Duration(*ttl) * time.Second).Sub(r.Clock.Now())
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	log.FromContext(ctx).Info("deleting run: ttlSecondsAfterFinished passed", "ttlSeconds", *ttl)
	return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, run, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// ensureMeta puts the finalizer (so that a deleted run's live turn is
// recorded as Aborted), the session label (so that the session's runs can
// be listed) and the drill label (so that drills can be) on the run, in one
// write.
func (r *AgentRunReconciler) ensureMeta(ctx context.Context, run *twv1.AgentRun) error {
	want := map[string]string{}
	if run.Spec.Session != "" {
		want[twv1.LabelSession] = run.Spec.Session
	}
	if run.Spec.Drill != nil {
		want[twv1.LabelDrill] = run.Spec.Drill.Scenario
	}
	labelled := true
	for k, v := range want {
		labelled = labelled && run.Labels[k] == v
	}
	if controllerutil.ContainsFinalizer(run, twv1.Finalizer) && labelled {
		return nil
	}
	base := run.DeepCopy()
	controllerutil.AddFinalizer(run, twv1.Finalizer)
	if run.Labels == nil && len(want) > 0 {
		run.Labels = map[string]string{}
	}
	maps.Copy(run.Labels, want)
	return r.Patch(ctx, run, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// release drops the finalizer once the run's turns are all settled.
func (r *AgentRunReconciler) release(ctx context.Context, run *twv1.AgentRun) error {
	if !controllerutil.ContainsFinalizer(run, twv1.Finalizer) {
		return nil
	}
	base := run.DeepCopy()
	controllerutil.RemoveFinalizer(run, twv1.Finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, run, client.MergeFrom(base)))
}

// turnsOf lists the run's turns, oldest first. Only turns the run controls
// count, so that a stale turn of a deleted run of the same name is ignored.
func (r *AgentRunReconciler) turnsOf(ctx context.Context, run *twv1.AgentRun) ([]twv1.AgentTurn, error) {
	var list twv1.AgentTurnList
	if err := r.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingFields{shared.IndexOwnerUID: string(run.UID)}); err != nil {
		return nil, err
	}
	turns := slices.DeleteFunc(list.Items, func(t twv1.AgentTurn) bool {
		return !metav1.IsControlledBy(&t, run)
	})
	slices.SortFunc(turns, func(a, b twv1.AgentTurn) int { return int(a.Spec.Attempt - b.Spec.Attempt) })
	return turns, nil
}

// createTurn creates the turn of an attempt. Its name is deterministic, so a
// second try (after a restart, or from a stale cache) finds it already there
// and creates nothing: created is false then.
func (r *AgentRunReconciler) createTurn(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn, attempt int32) (*twv1.AgentTurn, bool, error) {
	epoch, conv, resume, err := r.conversation(ctx, run, turns, attempt)
	if err != nil {
		return nil, false, err
	}
	prior := shared.PriorCounts(turns)
	prompt, err := shared.PromptOfRun(ctx, r.APIReader, run)
	if err != nil {
		return nil, false, err
	}
	turn := &twv1.AgentTurn{
		ObjectMeta: metav1.ObjectMeta{
			Name:      TurnName(run.Name, attempt),
			Namespace: run.Namespace,
			Labels:    render.TurnLabels(run, attempt),
		},
		Spec: twv1.AgentTurnSpec{
			RunName:        run.Name,
			Attempt:        attempt,
			Prompt:         prompt,
			ConversationID: conv,
			Continue:       resume.ok,
			AgentSessionID: resume.agentSession,
			Epoch:          epoch,
			PriorCostUSD:   prior.CostUSD(),
			PriorSteps:     prior.Steps,
		},
	}
	if err := r.setTurnGuards(ctx, run, &turn.Spec); err != nil {
		return nil, false, err
	}
	if err := r.AddBudgetFinalizer(ctx, run, turn); err != nil {
		return nil, false, err
	}
	if err := controllerutil.SetControllerReference(run, turn, r.Scheme); err != nil {
		return nil, false, err
	}
	if err := r.Create(ctx, turn); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	log.FromContext(ctx).Info("created turn", "turn", turn.Name, "attempt", attempt, "conversationID", conv)
	return turn, true, nil
}

func TurnName(run string, attempt int32) string {
	return run + "-" + strconv.Itoa(int(attempt))
}

// conversation picks the epoch and conversation id of a new turn, and
// whether the agent resumes it. Without a session every attempt gets its own
// conversation. In a session, a continue takes the session's current epoch,
// and every fresh conversation (a run without continue, or a reroll) takes
// one past the highest epoch the session has seen, so that it never resumes
// another run's conversation. A continue resumes only when a turn of the
// session ran its agent at that epoch (see agentRan); otherwise the
// conversation does not exist yet and the agent starts it, under the same id.
func (r *AgentRunReconciler) conversation(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn, attempt int32) (int64, string, resumption, error) {
	if run.Spec.Session == "" {
		return 0, runConversationID(run.UID, attempt), resumption{}, nil
	}
	top, seen, err := r.sessionEpoch(ctx, run)
	if err != nil {
		return 0, "", resumption{}, err
	}
	for i := range turns {
		top, seen = max(top, turns[i].Spec.Epoch), true
	}
	cont := run.Spec.Continue && attempt == 0
	epoch := top
	if !cont && seen {
		epoch = top + 1
	}
	var resume resumption
	if cont {
		st, err := r.sessionTurns(ctx, run)
		if err != nil {
			return 0, "", resumption{}, err
		}
		if resume.ok = resumable(st, epoch); resume.ok {
			resume.agentSession = agentSessionOf(st, epoch)
		}
	}
	return epoch, SessionConversationID(run.Namespace, run.Spec.Session, epoch), resume, nil
}

// resumption says whether a turn continues its conversation, and the CLI's
// own session id to resume ("" when the earlier turn's stream named none).
type resumption struct {
	ok           bool
	agentSession string
}

// sessionEpoch is the highest status.epoch of the other runs of the session.
func (r *AgentRunReconciler) sessionEpoch(ctx context.Context, run *twv1.AgentRun) (top int64, seen bool, err error) {
	var list twv1.AgentRunList
	if err := r.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{twv1.LabelSession: run.Spec.Session}); err != nil {
		return 0, false, err
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == run.UID || o.Spec.Session != run.Spec.Session {
			continue
		}
		top, seen = max(top, o.Status.Epoch), true
	}
	return top, seen, nil
}

// writeStatus computes the status and writes it if it changed, then tells
// (events, metrics) about a run that just ended. The update carries the
// resourceVersion it read, so two passes over a stale copy cannot both
// report the same ending.
func (r *AgentRunReconciler) writeStatus(ctx context.Context, run *twv1.AgentRun, turns []twv1.AgentTurn, d Decision) error {
	before, announced := run.Status.Phase, run.Status.AnnouncedAttempt
	wrote, err := r.putStatus(ctx, run, runStatus(run, turns, d, metav1.NewTime(r.Clock.Now())))
	if err != nil || !wrote {
		return err
	}
	r.announceRerolls(run, turns, announced)
	if before != run.Status.Phase {
		r.recordEnd(ctx, run, d)
	}
	return nil
}

// putStatus is the one write of a run's status: it writes st if it differs
// from the run's, and remembers the write as the memo compares it
// (memoStatus), so that the next pass sees the cached copy as current once
// it shows the write. It says whether it wrote.
func (r *AgentRunReconciler) putStatus(ctx context.Context, run *twv1.AgentRun, st twv1.AgentRunStatus) (bool, error) {
	if equality.Semantic.DeepEqual(st, run.Status) {
		return false, nil
	}
	run.Status = st
	if err := r.Status().Update(ctx, run); err != nil {
		return false, err
	}
	r.written.Wrote(run.UID, shared.MemoStatus(run.Status), r.Clock.Now())
	return true, nil
}

func (r *AgentRunReconciler) recordEnd(ctx context.Context, run *twv1.AgentRun, d Decision) {
	switch run.Status.Phase {
	case twv1.RunFaulted:
		f := run.Status.Fault
		shared.FaultsTotal.WithLabelValues(string(f.Class), shared.DrillLabel(run.Labels)).Inc()
		r.Recorder.Eventf(run, d.last, corev1.EventTypeWarning, EventFaulted, "Fault", "%s", faultMessage(f, d.Why))
		log.FromContext(ctx).Info("run faulted", "class", f.Class, "detector", f.Detector, "turn", f.Turn)
	case twv1.RunSucceeded:
		r.Recorder.Eventf(run, d.last, corev1.EventTypeNormal, eventSucceeded, "Settle", "turn %s finished with a final result", d.last.Name)
	case twv1.RunAborted:
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, eventAborted, "Abort", "the run was cancelled or deleted")
	}
}

// announceRerolls emits the Rerolled Event of every turn (oldest first)
// whose attempt is past announced, the status's mark before the write that
// raised it: each reroll is told once, by whichever pass first records its
// turn in status, even after a restart between the turn's creation and that
// write.
func (r *AgentRunReconciler) announceRerolls(run *twv1.AgentRun, turns []twv1.AgentTurn, announced int32) {
	for i := 1; i < len(turns); i++ {
		if turns[i].Spec.Attempt > announced {
			r.recordReroll(run, &turns[i-1], &turns[i])
		}
	}
}

func (r *AgentRunReconciler) recordReroll(run *twv1.AgentRun, failed, next *twv1.AgentTurn) {
	class := ErrorType(failed)
	shared.RerollsTotal.WithLabelValues(string(class)).Inc()
	r.Recorder.Eventf(run, next, corev1.EventTypeWarning, EventRerolled, "Reroll", "%s; rerolling as turn %s (attempt %d) with a fresh conversation",
		faultMessage(faultOf(failed), ""), next.Name, next.Spec.Attempt)
}

// SetupWithManager registers the controller: it follows AgentRuns and the
// turns they own.
func (r *AgentRunReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&twv1.AgentRun{}).
		Owns(&twv1.AgentTurn{}).
		Watches(&twv1.AgentRun{}, handler.EnqueueRequestsFromMapFunc(r.sessionWaiters), builder.WithPredicates(sessionPhaseChanged)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(drillRunOfPod), builder.WithPredicates(drillPodEnded)).
		Watches(&twv1.TurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.heldRuns), builder.WithPredicates(budgetChanged)).
		Watches(&twv1.ClusterTurnPolicy{}, handler.EnqueueRequestsFromMapFunc(r.heldRuns), builder.WithPredicates(budgetChanged)).
		Named("agentrun").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, concurrency)}).
		Complete(r)
}
