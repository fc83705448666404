package controllers

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/agentrun"
	"turnwatch.dev/turnwatch/controllers/agentturn"
	"turnwatch.dev/turnwatch/controllers/attach"
	"turnwatch.dev/turnwatch/controllers/attachns"
	"turnwatch.dev/turnwatch/controllers/shared"
	"turnwatch.dev/turnwatch/controllers/turnpolicy"
)

// controllerName is the reporting controller of turnwatch's Events.
const controllerName = "turnwatch-controller"

// Options are the manager's settings for both controllers.
type Options struct {
	// Config is the cluster defaults.
	Config shared.Config
	// SidecarImage is the image of the injected sidecar.
	SidecarImage string
	// Concurrency is how many runs, and how many turns, are reconciled at
	// once. 0 means 1.
	Concurrency int
	// Clock is the time source; tests pass a fake one.
	Clock clock.PassiveClock
	// LogTail reads an agent's log tail; nil means through the manager's
	// own credential (pods/log).
	LogTail agentturn.LogTail
	// Manager is the manager's RBAC subject (ManagerSubject); nil means ask
	// the API server at setup.
	Manager *rbacv1.Subject
	// Namespaces are the namespaces the manager's cache is narrowed to
	// (cache.Options.DefaultNamespaces), and so the attach cache; nil means
	// every namespace.
	Namespaces map[string]cache.Config
}

// Setup registers the controllers with the manager: runs, turns,
// policies and attached Pods.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.LogTail == nil {
		lt, err := agentturn.KubeLogTail(mgr.GetConfig())
		if err != nil {
			return err
		}
		o.LogTail = lt
	}
	if o.Manager == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := managerSubject(ctx, mgr.GetConfig())
		if err != nil {
			return err
		}
		o.Manager = m
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &twv1.AgentTurn{}, shared.IndexOwnerUID, shared.OwnerUID); err != nil {
		return err
	}
	rec := drillEvents{mgr.GetEventRecorder(controllerName)}
	if err := (&agentrun.AgentRunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: rec, Clock: o.Clock, Config: o.Config,
	}).SetupWithManager(mgr, o.Concurrency); err != nil {
		return err
	}
	if err := (&turnpolicy.TurnPolicyReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: o.Clock, Config: o.Config,
	}).SetupWithManager(mgr, o.Concurrency); err != nil {
		return err
	}
	if err := (&attachns.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: o.Config, SidecarImage: o.SidecarImage, Manager: o.Manager,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&agentturn.AgentTurnReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: rec, Clock: o.Clock, Config: o.Config, SidecarImage: o.SidecarImage, LogTail: o.LogTail, Manager: o.Manager,
	}).SetupWithManager(mgr, o.Concurrency); err != nil {
		return err
	}
	pods, err := attach.NewCache(mgr, o.Namespaces)
	if err != nil {
		return err
	}
	return (&attach.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec, Clock: o.Clock, Config: o.Config,
	}).SetupWithManager(mgr, pods, o.Concurrency)
}
