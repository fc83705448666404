package sidecar

import (
	"encoding/json"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The summary carries the engine's ignored count to the controller; a
// summary written before the field existed reads as 0, and one with none
// ignored is written as before.
func TestSummaryIgnored(t *testing.T) {
	s := protocol.SummaryOf(monitor.Report{Steps: 1, CostUSD: "0.01", Result: true, Lines: 5, Unparsed: 1, Ignored: 2})
	if got, want := protocol.Marshal(s), `{"steps":1,"costUSD":"0.01","stopReason":"","result":true,"lines":5,"unparsed":1,"ignored":2,"complete":false}`; got != want {
		t.Errorf("summary %s, want %s", got, want)
	}
	if got := protocol.Marshal(protocol.SummaryOf(monitor.Report{CostUSD: "0.00"})); got != `{"steps":0,"costUSD":"0.00","stopReason":"","result":false,"lines":0,"unparsed":0,"complete":false}` {
		t.Errorf("summary without ignored lines %s", got)
	}
	var old protocol.Summary
	if err := json.Unmarshal([]byte(`{"steps":1,"costUSD":"0.01","stopReason":"end","result":true,"lines":5,"unparsed":0,"complete":true}`), &old); err != nil || old.Ignored != 0 || old.Steps != 1 {
		t.Errorf("old summary: %+v %v", old, err)
	}
}

// The summary carries the CLI's own session id the engine read, for the
// controller to record on the turn (a continue resumes it).
func TestSummaryAgentSession(t *testing.T) {
	s := protocol.SummaryOf(monitor.Report{CostUSD: "0.01", Result: true, AgentSessionID: "ses_abc"})
	if got, want := protocol.Marshal(s), `{"steps":0,"costUSD":"0.01","stopReason":"","result":true,"lines":0,"unparsed":0,"agentSessionID":"ses_abc","complete":false}`; got != want {
		t.Errorf("summary %s, want %s", got, want)
	}
}
