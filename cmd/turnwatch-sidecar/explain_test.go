package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/explain"
)

func TestExplainCommand(t *testing.T) {
	const loop = "../../test/fakeagent/scenarios/claude/identicalLoop.log"
	tests := []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"text", []string{"explain", "--format", "claude", loop}, 0,
			[]string{"TRIPPED identicalCalls (runaway)", "#4 Grep", ">>"}},
		{"colour always", []string{"explain", "--format", "claude", "--color", "always", loop}, 0, []string{"\x1b["}},
		{"guards", []string{"explain", "--format", "claude", "--guards", "testdata/explain-guards.json", loop}, 0,
			[]string{"repeated an identical tool call 2 times"}},
		{"audited", []string{"explain", "--format", "claude", "--audit", "identicalCalls", loop}, 0,
			[]string{"would trip identicalCalls (runaway, audited) first at line 37, 25 times", "final result"}},
		{"no file", []string{"explain", "--format", "claude"}, 2, nil},
		{"bad output", []string{"explain", "--output", "yaml", loop}, 2, nil},
		{"missing file", []string{"explain", "nope.log"}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := dispatch(tt.args, strings.NewReader(""), &out, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errOut.String())
			}
			for _, w := range tt.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tt.name == "text" && strings.Contains(out.String(), "\x1b[") {
				t.Error("colour on a buffer that is no terminal")
			}
		})
	}
}

func TestExplainJSONFromStdin(t *testing.T) {
	var out, errOut bytes.Buffer
	in := strings.NewReader(`{"type":"step_start","part":{"type":"step-start"}}` + "\n")
	if code := dispatch([]string{"explain", "-o", "json", "--format", "opencode", "-"}, in, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var tl explain.Timeline
	if err := json.Unmarshal(out.Bytes(), &tl); err != nil || tl.Report.Lines != 1 || tl.Report.Format != "opencode" {
		t.Errorf("json %s: %v", out.String(), err)
	}
}
