package monitor

import "testing"

func TestStepBudget(t *testing.T) {
	tests := []struct {
		budget, steps int
		want          bool
	}{
		{256, 0, false},
		{256, 256, false}, // strict where it bounds
		{256, 257, true},
		{1, 2, true},
		{0, 100000, false}, // 0 switches it off
	}
	for _, tt := range tests {
		s := State{Guards: Guards{StepBudget: tt.budget}, Steps: tt.steps}
		reason, msg, failed := stepBudget(&s)
		if failed != tt.want {
			t.Errorf("budget %d steps %d: failed=%v, want %v", tt.budget, tt.steps, failed, tt.want)
		}
		if failed && (reason != DetectorStepBudget || msg != "exceeded "+itoa(tt.budget)+" steps") {
			t.Errorf("reason %q message %q", reason, msg)
		}
	}
}

// A step counts at the first sight of its call id, however many events
// restate it, whatever happens to it after; calls after the final result
// are not steps; a start event reopens the turn.
func TestStepsCountEachCallOnce(t *testing.T) {
	partial := func(typ string, args any) string {
		m := piMsg([]any{piCall("c1", "bash", args)}, 0, "toolUse")
		return js(map[string]any{"type": "message_update", "message": m,
			"assistantMessageEvent": map[string]any{"type": typ, "contentIndex": 0, "partial": m}})
	}
	m := piMsg([]any{piCall("c1", "bash", map[string]any{"command": "ls"})}, 0, "toolUse")
	lines := []string{
		`{"type":"agent_start"}`,
		partial("toolcall_start", map[string]any{}),
		partial("toolcall_delta", map[string]any{"command": "l"}),
		partial("toolcall_delta", map[string]any{"command": "ls"}),
		js(map[string]any{"type": "message_end", "message": m}),
		js(map[string]any{"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": map[string]any{"command": "ls"}}),
		js(map[string]any{"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "result": nil, "isError": true}),
		js(map[string]any{"type": "turn_end", "message": m, "toolResults": []any{}}),
		js(map[string]any{"type": "agent_end", "messages": []any{m}}),
		// after the final result: not a step
		js(map[string]any{"type": "tool_execution_start", "toolCallId": "c2", "toolName": "bash", "args": map[string]any{}}),
	}
	r := replayLines(t, FormatPi, DefaultGuards(), lines)
	if r.Steps != 1 || !r.Result {
		t.Fatalf("steps %d result %v, want 1 and true", r.Steps, r.Result)
	}
	// A later agent_start (pi's auto-retry) reopens the turn.
	lines = append(lines, `{"type":"agent_start"}`,
		js(map[string]any{"type": "tool_execution_start", "toolCallId": "c3", "toolName": "bash", "args": map[string]any{}}))
	r = replayLines(t, FormatPi, DefaultGuards(), lines)
	if r.Steps != 2 || r.Result {
		t.Fatalf("after reopen: steps %d result %v, want 2 and false", r.Steps, r.Result)
	}
}

func itoa(n int) string { return js(n) }
