package shared

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// The mode label of turnwatch_trips_total (docs/metrics.md): a trip that
// stopped a turn, or an audited detector's would-trip.
const (
	ModeEnforce = string(twv1.EnforcementEnforce)
	ModeAudit   = string(twv1.EnforcementAudit)
)

// The metrics endpoint serves HTTPS to authenticated and authorized callers
// only (cmd/manager/main.go): the manager checks each caller's token and its right to
// GET /metrics (ClusterRole turnwatch-metrics-reader) with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Metrics, registered with controller-runtime's registry (served on the
// manager's metrics endpoint).
var (
	TripsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_trips_total",
		Help: "Turns stopped by a sidecar detector (mode enforce), and turns an audited detector would have stopped (mode audit, once per turn and detector), by detector, fault class, drill scenario (empty unless a drill) and mode.",
	}, []string{"detector", "class", "drill", "mode"})
	RerollsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_rerolls_total",
		Help: "Reroll turns created, by the fault class of the turn they replace.",
	}, []string{"class"})
	FaultsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_faults_total",
		Help: "AgentRuns that ended Faulted, by fault class and drill scenario (empty unless a drill).",
	}, []string{"class", "drill"})
	NudgesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "turnwatch_nudges_total",
		Help: "Silent-run nudges reported by sidecars.",
	})
	TurnsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_turns_total",
		Help: "Settled turns, by outcome, fault class (empty unless Failed), drill scenario (empty unless a drill) and attached (\"true\" for an attached Pod's turn, docs/attach.md).",
	}, []string{"outcome", "class", "drill", "attached"})
	TurnSteps = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "turnwatch_turn_steps",
		Help:    "Steps (tool calls) of settled turns; drills not counted.",
		Buckets: []float64{1, 4, 16, 32, 64, 128, 256, 512},
	})
	WarningsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "turnwatch_warnings_total",
		Help: "Turns a sidecar warned about (once per turn and reason: DeltasHidden, HooksNotRun, CostMismatch, FormatMismatch), by reason and drill scenario (empty unless a drill).",
	}, []string{"reason", "drill"})
	TurnCost = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "turnwatch_turn_cost_usd",
		Help:    "Cost in USD of settled turns; drills not counted.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 25},
	})
)

func init() {
	metrics.Registry.MustRegister(TripsTotal, RerollsTotal, FaultsTotal, NudgesTotal, WarningsTotal, TurnsTotal, TurnSteps, TurnCost)
}

// DrillLabel is the drill label's value of a run's or turn's series: its
// drill scenario, "" for a real run (docs/metrics.md).
func DrillLabel(labels map[string]string) string { return labels[twv1.LabelDrill] }

// AttachedLabel is the attached label's value of a turn's series: "true"
// for an attached Pod's turn (docs/attach.md), "false" for a run's.
func AttachedLabel(turn *twv1.AgentTurn) string { return strconv.FormatBool(turn.Spec.PodRef != nil) }

// RecordSettled counts a settled turn in the turn metrics: its outcome and
// class, its steps and cost (not a drill's: its scripted figures are no
// one's spend), and the detector's trip that stopped it.
func RecordSettled(turn *twv1.AgentTurn, tripped bool) {
	st := &turn.Status
	var class twv1.FaultClass
	if st.Error != nil {
		class = st.Error.Type
	}
	drill := DrillLabel(turn.Labels)
	TurnsTotal.WithLabelValues(string(st.Outcome), string(class), drill, AttachedLabel(turn)).Inc()
	if drill == "" {
		TurnSteps.Observe(float64(st.Steps))
		TurnCost.Observe(UsdFloat(st.CostUSD))
		ObserveSettled(turn)
	}
	if tripped {
		TripsTotal.WithLabelValues(st.Error.Detector, string(class), drill, ModeEnforce).Inc()
	}
}
