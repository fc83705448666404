package monitor

import (
	"strings"
	"testing"
)

// ReadTail judges nothing: a loop in the tail does not hide the final
// result that follows it, and a tail without one says so.
func TestReadTail(t *testing.T) {
	var s stream
	for range 6 {
		s.claudeToolOnly("Bash", map[string]any{"command": "ls"}, false)
	}
	withResult := append(append([]string{}, s.lines...), `{"type":"result","subtype":"error_max_turns","is_error":true}`)
	cases := []struct {
		name   string
		lines  []string
		result bool
		errTxt string
	}{
		{"loop then the agent's failure", withResult, true, "error_max_turns"},
		{"loop, no result", s.lines, false, ""},
		{"empty", nil, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := ReadTail(FormatClaude, strings.NewReader(strings.Join(c.lines, "\n")), 0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != c.result || rep.ResultError != c.errTxt || len(rep.Trips) != 0 {
				t.Errorf("report %s", js(rep))
			}
		})
	}
}
