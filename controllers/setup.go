package controllers

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the reporting controller of turnwatch's Events.
const ControllerName = "turnwatch-controller"

// Setup registers both controllers with the manager.
func Setup(mgr ctrl.Manager, cfg Config, sidecarImage string, clk clock.PassiveClock) error {
	rec := mgr.GetEventRecorder(ControllerName)
	if err := (&AgentRunReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec, Clock: clk, Config: cfg,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&AgentTurnReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: rec, Clock: clk, Config: cfg, SidecarImage: sidecarImage,
	}).SetupWithManager(mgr)
}
