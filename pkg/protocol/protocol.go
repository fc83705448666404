// Package protocol holds the contract between the turnwatch sidecar and the
// controller: Pod condition types and reasons, the env the controller hands
// to the Pod, the machine-readable progress and summary the sidecar reports,
// and the settle rules both sides read them by. It has no Kubernetes imports
// so that both sides, and tests, share one definition.
package protocol

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Pod condition types the sidecar sets on its own Pod.
const (
	// ConditionTripped is True once a detector ends the turn. Its reason is
	// the detector's name with a capital first letter, its message the
	// legible text ("repeated an identical tool call 4 times").
	ConditionTripped = "turnwatch.dev/Tripped"
	// ConditionSilent is True once the silent-run nudge fired. The run goes on.
	ConditionSilent = "turnwatch.dev/Silent"
	// ConditionDeltasHidden is True once the agent's stream showed it hides
	// the model's deltas (a whole message before any delta): the detectors
	// that read deltas cannot see it. Its reason is ReasonDeltasHidden, its
	// message which detectors are blind and the flag that fixes it.
	ConditionDeltasHidden = "turnwatch.dev/DeltasHidden"
	// ConditionHooksNotRun is True once a turn that delivers nudges through
	// the shared volume ended a nudge's delivery, or the turn, with tool
	// calls run (answered without an error) and no turnwatch hook ever run (the CLI started with its
	// hooks off, or not wired to the adapter): nudges cannot reach the
	// model. Its reason is ReasonHooksNotRun.
	ConditionHooksNotRun = "turnwatch.dev/HooksNotRun"
	// ConditionCostMismatch is True once the stream reported a cost the
	// engine did not take as it stood (docs/design.md#a-cost-never-goes-down):
	// a total below what was counted already (the turn keeps the higher
	// figure), or a cost or token count no model could produce (not
	// counted). Its reason is ReasonCostMismatch, its message the engine's
	// first note (monitor.Report.CostMismatch).
	ConditionCostMismatch = "turnwatch.dev/CostMismatch"
	// ConditionFormatMismatch is True once most of the stream's lines did
	// not read as the run's format (docs/design.md#format-mismatch): the
	// detectors cannot see such a stream. Its reason is
	// ReasonFormatMismatch, its message how many lines did not read and
	// the format they read as (monitor.Report.FormatMismatch). Unlike the
	// other warnings it is written at once, not with the next write: the
	// agent runs on unwatched.
	ConditionFormatMismatch = "turnwatch.dev/FormatMismatch"
	// ConditionLogRotated is True once the kubelet rotated the agent's log
	// past the line the sidecar was reading: it lagged past a rotation, and
	// lines may have been rotated away unread (the log API serves the
	// current file only). Its reason is ReasonLogRotated, its message the
	// line's time and how it was seen.
	ConditionLogRotated = "turnwatch.dev/LogRotated"
	// ConditionProgress carries a Progress JSON object in its message,
	// throttled by the sidecar.
	ConditionProgress = "turnwatch.dev/Progress"
	// ConditionFinished is True once the agent's output ended and the sidecar
	// made its final evaluation. Its message is a Summary JSON object.
	ConditionFinished = "turnwatch.dev/Finished"
	// ConditionFailed is True once the sidecar hit an error that retrying
	// cannot fix (its log stream or its own Pod refused or gone) and is
	// ending: the agent runs unwatched. Its reason is one of
	// SidecarFailureReasons, its message the API server's error. The sidecar
	// also writes "<reason>: <message>" to its termination message, for when
	// the condition cannot be written (the Pod's status refused too).
	ConditionFailed = "turnwatch.dev/Failed"
	// ConditionDrill is True on a drill turn's Pod (docs/drill.md) once the
	// sidecar's scripted model served the agent. Its reason is
	// ReasonDrillServed, its message a DrillReport JSON object, rewritten as
	// it changes and last at the turn's end.
	ConditionDrill = "turnwatch.dev/Drill"
	// ConditionCallRefused is True once the agent's pre-tool hook refused a
	// call because the sidecar judged it a trip (nudgefile.Ack's Refused).
	// Its reason is ReasonCallRefused, its message the call's id.
	ConditionCallRefused = "turnwatch.dev/CallRefused"
	// ConditionWouldTrip is True once a detector the turn audits
	// (EnvAudit) would have stopped it; the turn went on. Its reason is
	// ReasonWouldTrip, its message a JSON list of WouldTrip, one per
	// detector: written at each detector's first would-trip, its counts
	// with the next Progress period and last with the Tripped or Finished
	// write.
	ConditionWouldTrip = "turnwatch.dev/WouldTrip"
)

// Warning is a Pod condition that tells and decides nothing: the
// controller copies it onto the turn (as a condition whose type is the
// reason) and tells it once per turn as a Warning Event of that reason.
type Warning struct{ Condition, Reason string }

// Warnings lists them.
var Warnings = []Warning{
	{ConditionDeltasHidden, ReasonDeltasHidden},
	{ConditionHooksNotRun, ReasonHooksNotRun},
	{ConditionCostMismatch, ReasonCostMismatch},
	{ConditionFormatMismatch, ReasonFormatMismatch},
	{ConditionLogRotated, ReasonLogRotated},
}

// Reasons of ConditionFailed, and prefixes of the sidecar's termination
// message.
const (
	ReasonLogForbidden = "LogForbidden" // reading the agent's log was refused (403)
	ReasonLogNotFound  = "LogNotFound"  // the agent's log was not found (404)
	ReasonPodForbidden = "PodForbidden" // reading or patching the own Pod's status was refused
	ReasonPodNotFound  = "PodNotFound"  // the own Pod was not found
	// ReasonDrillPortTaken: a drill's scripted model could not listen on
	// its port (docs/drill.md#ports).
	ReasonDrillPortTaken = "DrillPortTaken"
)

// SidecarFailureReasons lists the reasons of ConditionFailed.
var SidecarFailureReasons = []string{ReasonLogForbidden, ReasonLogNotFound, ReasonPodForbidden, ReasonPodNotFound, ReasonDrillPortTaken}

// SidecarFailure reads a sidecar termination message "<reason>: <message>"
// whose reason is one of SidecarFailureReasons; ok is false for any other.
func SidecarFailure(termination string) (reason, message string, ok bool) {
	r, m, found := strings.Cut(termination, ": ")
	if !found || !slices.Contains(SidecarFailureReasons, r) {
		return "", "", false
	}
	return r, strings.TrimSpace(m), true
}

// Reasons of ConditionProgress and ConditionFinished.
const (
	ReasonRunning = "Running"
	ReasonResult  = "Result" // the format's final result event was seen
	// ReasonDeltasHidden is ConditionDeltasHidden's reason.
	ReasonDeltasHidden = "DeltasHidden"
	// ReasonHooksNotRun is ConditionHooksNotRun's reason.
	ReasonHooksNotRun = "HooksNotRun"
	// ReasonCostMismatch is ConditionCostMismatch's reason.
	ReasonCostMismatch = "CostMismatch"
	// ReasonFormatMismatch is ConditionFormatMismatch's reason.
	ReasonFormatMismatch = "FormatMismatch"
	// ReasonLogRotated is ConditionLogRotated's reason.
	ReasonLogRotated = "LogRotated"
	ReasonNoResult   = "NoResult" // the output ended without one
	// ReasonDrillServed is ConditionDrill's reason.
	ReasonDrillServed = "Served"
	// ReasonCallRefused is ConditionCallRefused's reason.
	ReasonCallRefused = "CallRefused"
	// ReasonWouldTrip is ConditionWouldTrip's reason.
	ReasonWouldTrip = "WouldTrip"
)

// Env the controller sets on the agent container.
const (
	EnvPrompt         = "TURNWATCH_PROMPT"
	EnvConversationID = "TURNWATCH_CONVERSATION_ID"
	EnvContinue       = "TURNWATCH_CONTINUE"
	// EnvAgentSessionID is the agent CLI's own session id to resume when
	// TURNWATCH_CONTINUE is "true": the one the sidecar read from the stream
	// of the session's last turn (AgentTurn status.agentSessionID); "" when
	// that turn's stream named none.
	EnvAgentSessionID = "TURNWATCH_AGENT_SESSION_ID"
	EnvAttempt        = "TURNWATCH_ATTEMPT"
)

// Env the controller sets on the sidecar container.
const (
	EnvFormat         = "TURNWATCH_FORMAT"           // pi | claude | codex | opencode | gemini | auto
	EnvGuards         = "TURNWATCH_GUARDS"           // JSON object with docs/design.md#thresholds-and-guards names, defaults merged in
	EnvPrices         = "TURNWATCH_PRICES"           // JSON price table (see pkg/monitor)
	EnvPriorCostUSD   = "TURNWATCH_PRIOR_COST_USD"   // what earlier turns of the run cost, decimal string
	EnvPodName        = "TURNWATCH_POD_NAME"         // downward API
	EnvPodNamespace   = "TURNWATCH_POD_NAMESPACE"    // downward API
	EnvAgentContainer = "TURNWATCH_AGENT_CONTAINER"  // container whose log is followed
	EnvStreamFile     = "TURNWATCH_STREAM_FILE"      // optional: follow this file instead of the log
	EnvProgressPeriod = "TURNWATCH_PROGRESS_SECONDS" // optional: progress write period
	EnvStateDir       = "TURNWATCH_STATE_DIR"        // optional: the sidecar's own volume for its checkpoint
	// An attached Pod's guards (docs/attach.md): its turnwatch.dev/guards
	// annotation, laid over EnvGuards (its namespace's), each value over
	// its limit in EnvGuardLimits (a JSON object of guard names to limits)
	// capped to it (monitor.OverrideGuards).
	EnvGuardsOverride = "TURNWATCH_GUARDS_OVERRIDE"
	EnvGuardLimits    = "TURNWATCH_GUARD_LIMITS"
	// The run whose status.progress the sidecar writes, and what its earlier
	// turns counted; without a run name it reports progress on its Pod. The
	// run's UID goes into each report, so that a sidecar of an earlier run of
	// the same name cannot write into this one (the admission policy checks).
	EnvRunName    = "TURNWATCH_RUN_NAME"
	EnvRunUID     = "TURNWATCH_RUN_UID"
	EnvPriorSteps = "TURNWATCH_PRIOR_STEPS"
	// EnvModelPort is the loopback port the sidecar serves the agent's
	// model API on (a drill's scripted model, or the gateway), which the
	// controller also wrote into the agent's model endpoint.
	EnvModelPort = "TURNWATCH_MODEL_PORT"
	// EnvDrillScenario is a drill turn's scenario (docs/drill.md): the
	// gateway's upstream is then the scripted model playing it.
	EnvDrillScenario = "TURNWATCH_DRILL_SCENARIO"
	// The model gateway (docs/gateway.md): the upstream the sidecar
	// forwards the agent's model requests to (a drill's upstream is its
	// scripted model, and this is unset), the file holding the upstream's
	// key (a Secret mounted in the sidecar only), and the placeholder key
	// the agent was given: a request that carries another is refused.
	EnvModelUpstream = "TURNWATCH_MODEL_UPSTREAM"
	EnvModelKeyFile  = "TURNWATCH_MODEL_KEY_FILE"
	EnvModelToken    = "TURNWATCH_MODEL_TOKEN"
	// EnvModelHold, "true", makes the gateway hold a refused model request
	// open, unanswered, until the agent goes, instead of answering it: an
	// attached Pod's (docs/attach.md#the-model-gateway), which the Pod's
	// stop is to end, so that the Pod fails whatever the CLI would have
	// exited with.
	EnvModelHold = "TURNWATCH_MODEL_HOLD"
	// EnvBudgetLeftUSD is what the namespace's budgets had left when the
	// turn started, a decimal string (the least of them); unset when no
	// budget applies. The gateway refuses the next request once the turn
	// spent it.
	EnvBudgetLeftUSD = "TURNWATCH_BUDGET_LEFT_USD"
	// EnvBudget names the policy whose budget that is ("TurnPolicy/NAME"),
	// for the fault's message.
	EnvBudget = "TURNWATCH_BUDGET"
	// EnvAudit names the detectors whose trips the sidecar only reports
	// (ConditionWouldTrip), comma-separated; an unknown name stops the
	// sidecar at its start.
	EnvAudit = "TURNWATCH_AUDIT"
)

// SidecarContainerName is the name of the injected watchdog container.
const SidecarContainerName = "turnwatch-sidecar"

// Summary is the message of ConditionFinished: what the controller needs to
// settle a turn that no detector stopped. Its steps and cost are its
// Progress (the JSON fields "steps" and "costUSD" at the top level).
type Summary struct {
	Progress
	StopReason string `json:"stopReason"` // end | tool_use | length | error | aborted | ""
	Result     bool   `json:"result"`     // the format's final result event was seen
	Lines      int    `json:"lines"`
	Unparsed   int    `json:"unparsed"`
	// Ignored counts known lines that carry nothing (the engine's
	// Report.Ignored); absent when 0, so a summary written before it
	// existed reads the same.
	Ignored int `json:"ignored,omitempty"`
	// ResultError is the agent's own error text when its final result event
	// reported a failure (the engine's Report.ResultError); the controller
	// settles such a turn Failed with class agent-error.
	ResultError string `json:"resultError,omitempty"`
	// AgentSessionID is the CLI's own session id, read from its stream
	// (the engine's Report.AgentSessionID): a continue resumes it.
	AgentSessionID string `json:"agentSessionID,omitempty"`
	// Complete is true when the sidecar read the agent's stream to its end;
	// false when its drain deadline (after SIGTERM) cut the read short. The
	// controller does not settle no-signal on an incomplete summary without
	// reading the log's tail itself.
	Complete bool `json:"complete"`
	// WouldTrips are the audited detectors' would-trips (ConditionWouldTrip
	// as it stands at the end); absent when none.
	WouldTrips []WouldTrip `json:"wouldTrips,omitempty"`
}

// SummaryOf is the summary of what the engine read: the sidecar's at the
// end of the stream, the controller's of the log's tail.
func SummaryOf(rep monitor.Report) Summary {
	cost, _ := monitor.ParseMoney(rep.CostUSD) // the engine renders its own Money
	streamCost, _ := monitor.ParseMoney(rep.StreamCostUSD)
	return Summary{Progress: Progress{Steps: int64(rep.Steps), Cost: cost, StreamCost: streamCost}, StopReason: rep.StopReason, Result: rep.Result,
		Lines: rep.Lines, Unparsed: rep.Unparsed, Ignored: rep.Ignored, ResultError: rep.ResultError,
		AgentSessionID: rep.AgentSessionID, WouldTrips: WouldTripsOf(rep.WouldTrips, nil)}
}

// Marshal renders v as compact JSON for a condition message.
func Marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// ReasonFor turns a detector name ("identicalCalls") into a condition reason
// ("IdenticalCalls").
func ReasonFor(detector string) string {
	r, n := utf8.DecodeRuneInString(detector)
	if n == 0 {
		return ""
	}
	return string(unicode.ToUpper(r)) + detector[n:]
}

// DetectorFor is the inverse of ReasonFor.
func DetectorFor(reason string) string {
	r, n := utf8.DecodeRuneInString(reason)
	if n == 0 {
		return ""
	}
	return strings.ToLower(string(r)) + reason[n:]
}

// NudgeMessage is the message of ConditionSilent: which nudge streak of the
// turn it is (1 for the first) and the detector's text. Every streak's
// message differs, so a later streak is written (the sidecar writes a
// condition only when it changes) and the controller tells each one.
func NudgeMessage(streak int, text string) string {
	return nudgePrefix + strconv.Itoa(streak) + ": " + text
}

const nudgePrefix = "streak "

// NudgeStreak is the streak number of a ConditionSilent message; a message
// without one (an older sidecar's) is the first streak.
func NudgeStreak(message string) int {
	rest, ok := strings.CutPrefix(message, nudgePrefix)
	if !ok {
		return 1
	}
	num, _, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// SidecarUID is the user the sidecar runs as, reserved for it: a template
// may not run any container as this user (the AgentRun admission policy and
// the controller both refuse it), so no agent process shares the sidecar's
// user and none may read its files or open /proc/<pid>/root of its
// processes. It is below 65536 so that a Pod with a user namespace
// (hostUsers: false, which maps 0-65535) still starts, and away from the
// users images commonly take (0, 1000-range, 65532 "nonroot" of distroless,
// 65534 "nobody").
const SidecarUID int64 = 60319

// ReservedPrefix starts the name of every volume the controller adds to a
// turn's Pod; a template may not name a volume or a volume mount with it.
const ReservedPrefix = "turnwatch-"

// Delivery words the sidecar puts at the end of a nudge's ConditionSilent
// message, in brackets, once the nudge's delivery is known
// (docs/nudges.md#delivery-confirmed).
const (
	WordDelivered    = "delivered to the agent"
	WordNotDelivered = "not delivered to the agent"
)

// NudgeDelivery reads a ConditionSilent message's delivery words: known is
// false while the sidecar has not told it (or the run delivers no nudges).
func NudgeDelivery(message string) (delivered, known bool) {
	switch {
	case strings.Contains(message, "["+WordNotDelivered):
		return false, true
	case strings.Contains(message, "["+WordDelivered+"]"):
		return true, true
	}
	return false, false
}
