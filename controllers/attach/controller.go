package attach

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// Reconciler records and follows attached Pods. Its requests are Pods'
// keys, which are also their turns' keys.
type Reconciler struct {
	client.Client
	// Pods reads the attached Pods: a cache of its own, of the Pods
	// labelled turnwatch.dev/watch (CacheByObject), since the manager's
	// holds only the Pods of runs and a label selector cannot OR.
	Pods client.Reader
	// APIReader reads around the caches: an owner's earlier turns, for a
	// new turn's attempt.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Config    shared.Config

	written shared.WriteMemo[twv1.AgentTurnStatus]
	// created remembers the turns this process created until the cache
	// shows them, so that a pass on a cache without the turn does not
	// create it again (a refused write for nothing).
	created shared.WriteMemo[bool]
	stopped shared.WriteMemo[bool]
	Counts  shared.CountsThrottle
}

// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=turnwatch.dev,resources=agentturns/status,verbs=update
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch

// Reconcile records an attached Pod as a turn, once, and follows it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Pods.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // its turn goes with it
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: pod.Namespace}, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !Attached(pod, ns) {
		return ctrl.Result{}, nil
	}
	turn := &twv1.AgentTurn{}
	err := r.Get(ctx, req.NamespacedName, turn)
	if apierrors.IsNotFound(err) {
		return r.record(ctx, pod)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.created.Stale(pod.UID, true, r.Clock.Now()) // the cache shows it: forget it
	if !isTurnOf(turn, pod) {
		log.FromContext(ctx).Info("a turn of this name records another pod or a run; not taken over", "turn", turn.Name)
		return ctrl.Result{}, nil
	}
	if r.written.Stale(turn.UID, turn.Status, r.Clock.Now()) {
		// Our last write is not in the cache yet; its event brings us back.
		return ctrl.Result{RequeueAfter: shared.MemoTTL}, nil
	}
	if turn.Status.Outcome != "" {
		if err := r.keepStopped(ctx, turn, pod); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.lateReports(ctx, turn, pod)
	}
	return r.follow(ctx, turn, pod)
}

// keepStopped makes sure the Pod of a turn the manager stopped is stopped
// (a previous pass may have recorded the outcome and then died).
func (r *Reconciler) keepStopped(ctx context.Context, turn *twv1.AgentTurn, pod *corev1.Pod) error {
	if !stoppedByManager(turn) {
		return nil
	}
	return r.stop(ctx, pod)
}

// stoppedByManager says whether the turn's outcome is one the manager
// stops the Pod for: a detector's trip, or a spent budget. Any other end
// (the agent's exit, a broken container) is the Pod's own and its owner's.
func stoppedByManager(turn *twv1.AgentTurn) bool {
	e := turn.Status.Error
	return turn.Status.Outcome == twv1.TurnFailed && e != nil && e.Detector != "" && e.Type != twv1.ClassLength
}

// stop ends the agent the Kubernetes way: an active deadline of one second
// makes the kubelet kill the containers and the Pod fail (reason
// DeadlineExceeded), with the sidecar's Tripped condition still on it, for
// the owner's podFailurePolicy to read.
func (r *Reconciler) stop(ctx context.Context, pod *corev1.Pod) error {
	stopped := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds <= 1
	if r.stopped.Stale(pod.UID, stopped, r.Clock.Now()) || stopped || shared.PodTerminal(pod) {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`))
	if err := r.Patch(ctx, pod, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.stopped.Wrote(pod.UID, true, r.Clock.Now())
	log.FromContext(ctx).Info("stopped attached pod", "pod", pod.Name)
	return nil
}

// writeStatus writes st if it differs, guarded by the resourceVersion
// read, through the write memo.
func (r *Reconciler) writeStatus(ctx context.Context, turn *twv1.AgentTurn, st *twv1.AgentTurnStatus) error {
	if st.Outcome != "" {
		r.Counts.Settle(turn.UID, st)
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

// startTime is when the attached Pod started, as the kubelet says, else
// when it was created.
func startTime(pod *corev1.Pod) *metav1.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.DeepCopy()
	}
	return shared.PtrTime(pod.CreationTimestamp)
}

// minPositive is the least of the positive durations, or 0.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
