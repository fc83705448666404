package v1alpha1

// Labels on every AgentTurn and Pod (and, for the session, on the AgentRun).
const (
	// LabelRun is the AgentRun's name.
	LabelRun = "turnwatch.dev/run"
	// LabelAttempt is the turn's attempt number, "0" for the first.
	LabelAttempt = "turnwatch.dev/attempt"
	// LabelSession is the run's spec.session, where one is set. The
	// controller also puts it on the AgentRun so that the epoch of a session
	// can be found with a label selector.
	LabelSession = "turnwatch.dev/session"
	// LabelDrill is the scenario of a drill run (spec.drill.scenario), on
	// its turns and Pods (docs/drill.md).
	LabelDrill = "turnwatch.dev/drill"
	// LabelModelPort is the loopback port the sidecar of a Pod that serves
	// its agent's model (a drill's scripted model, or the model gateway)
	// listens on; the controller picks it unique among the live Pods that
	// serve a model (docs/drill.md#ports).
	LabelModelPort = "turnwatch.dev/model-port"
)

// LabelHostNetwork on a Namespace, set to HostNetworkAllowed, is the cluster
// administrator's consent that the turn Pods of its runs may use the node's
// network (spec.template.spec.hostNetwork, and so its ports). Nothing else
// lets a run out of the Pod Security Standard baseline: a namespace's
// editors cannot label their namespace (docs/policies.md#pod-security).
const (
	LabelHostNetwork   = "turnwatch.dev/host-network"
	HostNetworkAllowed = "allowed"
)

// Finalizer keeps an AgentRun until its live turn is recorded as Aborted.
const Finalizer = "turnwatch.dev/abort"

// BudgetFinalizer keeps a turn that a spend budget applies to until every
// budget's ledger counted it (docs/policies.md#the-ledger).
const BudgetFinalizer = "turnwatch.dev/budget"

// DetectorBudget is the detector named by a turn stopped because a policy's
// budget was spent (class overspend). The sidecar never trips it: the
// controller does.
const DetectorBudget = "budget"
