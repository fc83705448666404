package monitor

import (
	"fmt"
	"testing"
)

func TestIdenticalCallsCheck(t *testing.T) {
	tests := []struct {
		k, streak int
		want      bool
	}{{4, 3, false}, {4, 4, true}, {4, 5, true}, {1, 1, true}, {0, 99, false}}
	for _, tt := range tests {
		reason, msg, failed := identicalCalls(&State{Guards: Guards{IdenticalCalls: tt.k}, AgentCounters: AgentCounters{Streak: tt.streak}})
		if failed != tt.want {
			t.Errorf("k %d streak %d: failed=%v want %v", tt.k, tt.streak, failed, tt.want)
		}
		if failed && (reason != DetectorIdenticalCalls || msg != fmt.Sprintf("repeated an identical tool call %d times", tt.k)) {
			t.Errorf("reason %q message %q", reason, msg)
		}
	}
}

// The streak rules, through the fold: a different signature resets it, a
// restated call neither extends nor breaks it, a world tool's successful
// answer resets it and its error answer does not.
func TestIdenticalCallsStreak(t *testing.T) {
	same := map[string]any{"q": "x"}
	type step struct {
		call  string // tool name, "" for none
		args  any
		again bool // restate the previous call (same id) instead
		err   bool
	}
	tests := []struct {
		name  string
		steps []step
		trip  bool
	}{
		{"four in a row", []step{{call: "grep", args: same}, {call: "grep", args: same}, {call: "grep", args: same}, {call: "grep", args: same}}, true},
		{"a different call resets", []step{{call: "grep", args: same}, {call: "grep", args: same}, {call: "grep", args: same},
			{call: "read", args: same}, {call: "grep", args: same}, {call: "grep", args: same}, {call: "grep", args: same}}, false},
		{"different arguments reset", []step{{call: "grep", args: same}, {call: "grep", args: same}, {call: "grep", args: same},
			{call: "grep", args: map[string]any{"q": "y"}}, {call: "grep", args: same}}, false},
		{"restatements neither extend", []step{{call: "grep", args: same}, {again: true}, {again: true}, {again: true}, {call: "grep", args: same}}, false},
		{"nor break", []step{{call: "grep", args: same}, {call: "grep", args: same}, {again: true}, {call: "grep", args: same}, {call: "grep", args: same}}, true},
		{"world answer resets", []step{{call: "run_tests", args: same}, {call: "run_tests", args: same}, {call: "run_tests", args: same}, {call: "run_tests", args: same}}, false},
		{"world refusal does not", []step{{call: "run_tests", args: same, err: true}, {call: "run_tests", args: same, err: true},
			{call: "run_tests", args: same, err: true}, {call: "run_tests", args: same, err: true}}, true},
	}
	g := guards(func(g *Guards) { g.WorldTools = []string{"run_tests"} })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			var lastID, lastMsg string
			var lastBlock map[string]any
			for _, st := range tt.steps {
				if st.again { // claude may repeat a message id and its blocks
					s.add(cAssistant(lastMsg, []any{lastBlock}, nil))
					continue
				}
				lastMsg, lastID = s.id("msg"), s.id("toolu")
				lastBlock = map[string]any{"type": "tool_use", "id": lastID, "name": st.call, "input": st.args}
				s.add(cAssistant(lastMsg, []any{lastBlock}, "tool_use"), cToolResult(lastID, st.err))
			}
			r := replayLines(t, FormatClaude, g, s.lines)
			if got := len(r.Trips) > 0; got != tt.trip {
				t.Fatalf("trips %s, want trip=%v", js(r.Trips), tt.trip)
			}
		})
	}
}

func TestCallSigCanonical(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, true},
		{`{"a":1}`, ` { "a" : 1.0 } `, true},
		{`{"a":1}`, `{"a":1e0}`, true},
		{`{"a":"\u00e9\n"}`, `{"a":"é\n"}`, true},
		{`{"a":"\ud83d\ude00"}`, `{"a":"😀"}`, true},
		{`{"a":"\/"}`, `{"a":"/"}`, true},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":{"b":1}}`, `{"a":{"b":1,"c":null}}`, false},
		{`{"a":true}`, `{"a":false}`, false},
		{`{"a":null}`, `{}`, false},
		{`"grep -r TODO ."`, `"grep -r TODO ."`, true},
		{`not json`, `not json`, true},
		{`not json`, `not json!`, false},
	}
	for _, tt := range tests {
		if got := callSig([]byte("t"), []byte(tt.a)) == callSig([]byte("t"), []byte(tt.b)); got != tt.equal {
			t.Errorf("%s vs %s: equal=%v, want %v", tt.a, tt.b, got, tt.equal)
		}
	}
	if callSig([]byte("grep"), []byte(`{}`)) == callSig([]byte("find"), []byte(`{}`)) {
		t.Error("the tool name must be part of the signature")
	}
}
