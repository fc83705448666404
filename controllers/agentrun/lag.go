package agentrun

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers/shared"
)

// SidecarLag is how far behind its agent's log each running run's sidecar
// reads, as its latest progress report said (status.progress.lag,
// docs/metrics.md). The sidecar has no metrics endpoint of its own: it
// reports to its run's status, as it reports progress, and the manager
// serves what it reported. One series per running run; a run that ends or
// goes away takes its series along.
var SidecarLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "turnwatch_sidecar_lag_seconds",
	Help: "How far behind its agent's log the sidecar of a running run read at its latest progress report: the time it read its last line less that line's log timestamp, in seconds.",
}, []string{"namespace", "run"})

func init() {
	metrics.Registry.MustRegister(SidecarLag)
}

// SetLagMetric sets a run's lag series from its current turn's latest
// report, or drops it: the run is not running, or its current turn's
// sidecar has reported no lag yet.
func SetLagMetric(run *twv1.AgentRun) {
	if lag := CurrentLag(run); lag >= 0 {
		SidecarLag.WithLabelValues(run.Namespace, run.Name).Set(lag)
		return
	}
	ForgetLagMetric(types.NamespacedName{Namespace: run.Namespace, Name: run.Name})
}

func ForgetLagMetric(run types.NamespacedName) {
	SidecarLag.DeleteLabelValues(run.Namespace, run.Name)
}

// CurrentLag is the lag in seconds that the sidecar of the run's current
// turn last reported, or -1: a report of another turn (the one before, whose
// sidecar may still drain) or of another run of the same name does not
// count.
func CurrentLag(run *twv1.AgentRun) float64 {
	st := &run.Status
	if st.Phase != twv1.RunRunning || len(st.Turns) == 0 || st.Progress == nil || st.Progress.Lag == nil {
		return -1
	}
	cur := st.Turns[len(st.Turns)-1]
	if cur.Outcome != "" || shared.RunProgressFor(run, cur.Name) == nil {
		return -1
	}
	return max(st.Progress.Lag.Seconds(), 0)
}
