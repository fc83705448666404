package protocol

// ConditionResult is True once the agent printed its format's final result
// event and its output has not ended a few seconds later: the agent is
// done but has not exited. Its lastTransitionTime is when the result was
// read, so the controller can give the agent exitGrace from then on before
// it settles the turn and stops the Pod; its message is the Summary so far
// (complete false), so a result that reports an error settles agent-error. Agents that exit right
// after their result never get it (their Finished condition comes first).
const ConditionResult = "turnwatch.dev/Result"
