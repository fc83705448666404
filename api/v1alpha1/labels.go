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

// Attach (docs/attach.md): the labels and the annotation by which a
// namespace's owner and a Pod's author opt a Pod that turnwatch did not
// create into a watched turn.
const (
	// LabelAttach on a Namespace, set to AttachEnabled, is its owner's
	// consent: the admission policy turnwatch-attach injects the sidecar
	// into its Pods that carry LabelWatch.
	LabelAttach   = "turnwatch.dev/attach"
	AttachEnabled = "enabled"
	// LabelWatch on a Pod (or a Job's, CronJob's or Sandbox's pod
	// template) asks for the sidecar: its value is the agent's stream
	// format, or auto.
	LabelWatch = "turnwatch.dev/watch"
	// LabelAgentContainer on a watched Pod names the agent's container
	// when it is not the first.
	LabelAgentContainer = "turnwatch.dev/agent-container"
	// AnnotationGuards on a watched Pod is a JSON object of guards over
	// the namespace's, capped by its policies' limits.
	AnnotationGuards = "turnwatch.dev/guards"
	// AttachParams is the ConfigMap the manager keeps in each attach
	// namespace: the injected sidecar's image, guards and limits, read by
	// the admission policy turnwatch-attach as its parameters.
	AttachParams = "turnwatch-attach"
)
