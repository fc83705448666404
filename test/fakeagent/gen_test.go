package main

import (
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScenariosAreUpToDate(t *testing.T) {
	want := Generate()
	seen := map[string]bool{}
	err := fs.WalkDir(scenarios, "scenarios", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
			return err
		}
		key := strings.TrimSuffix(strings.TrimPrefix(p, "scenarios/"), ".log")
		seen[key] = true
		got, _ := fs.ReadFile(scenarios, p)
		if w, ok := want[key]; !ok {
			t.Errorf("%s is checked in but not generated", p)
		} else if string(got) != w {
			t.Errorf("%s is stale: run go generate ./test/fakeagent", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s is generated but not checked in: run go generate ./test/fakeagent", k)
		}
	}
}

// eventTypes are the event types each format's real CLI prints (see
// pkg/monitor/testdata/corpus and its SOURCES.md); the generated streams use no others.
var eventTypes = map[string][]string{
	"pi": {"agent_start", "turn_start", "message_start", "message_update", "message_end",
		"tool_execution_start", "tool_execution_update", "tool_execution_end", "turn_end", "agent_end"},
	"claude":   {"system", "stream_event", "assistant", "user", "result"},
	"codex":    {"thread.started", "turn.started", "item.started", "item.updated", "item.completed", "turn.completed", "turn.failed"},
	"opencode": {"step_start", "text", "tool_use", "step_finish", "error"},
	"gemini":   {"init", "message", "tool_use", "tool_result", "error", "result"},
}

// isFinal says whether ev is the format's final result event
// (docs/design.md#turn-boundaries).
func isFinal(format string, ev map[string]any) bool {
	switch format {
	case "pi":
		return ev["type"] == "agent_end"
	case "claude", "gemini":
		return ev["type"] == "result"
	case "codex":
		return ev["type"] == "turn.completed"
	default:
		part, _ := ev["part"].(map[string]any)
		return ev["type"] == "step_finish" && part["reason"] == "stop"
	}
}

type parsed struct {
	at time.Time
	ev map[string]any
	js string
}

func parse(t *testing.T, key, text string) []parsed {
	t.Helper()
	var out []parsed
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		at, rest, ok := cutTimestamp(l)
		if !ok {
			t.Fatalf("%s line %d has no timestamp prefix: %.80q", key, i+1, l)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(rest), &ev); err != nil {
			t.Fatalf("%s line %d is not a JSON object: %v", key, i+1, err)
		}
		out = append(out, parsed{at, ev, rest})
	}
	return out
}

func TestScenarioStreams(t *testing.T) {
	scripts := map[string]Script{}
	for _, s := range Scripts() {
		scripts[s.Name] = s
	}
	for key, text := range Generate() {
		format, name, _ := strings.Cut(key, "/")
		t.Run(key, func(t *testing.T) {
			evs := parse(t, key, text)
			allowed := map[string]bool{}
			for _, typ := range eventTypes[format] {
				allowed[typ] = true
			}
			var longest time.Duration
			for i, p := range evs {
				if !allowed[p.ev["type"].(string)] {
					t.Errorf("line %d: event type %q is not one %s prints", i+1, p.ev["type"], format)
				}
				if i > 0 {
					gap := p.at.Sub(evs[i-1].at)
					if gap < 0 {
						t.Errorf("line %d: time goes back by %v", i+1, -gap)
					}
					longest = max(longest, gap)
				}
			}
			finals := 0
			for _, p := range evs {
				if isFinal(format, p.ev) {
					finals++
				}
			}
			wantFinal := scripts[name].Result
			if key == "opencode/lengthStop" {
				// opencode's final result is a step_finish with reason stop;
				// a run cut by the length cap ends on reason length instead.
				wantFinal = false
			}
			if want := map[bool]int{true: 1, false: 0}[wantFinal]; finals != want {
				t.Errorf("%d final result events, want %d", finals, want)
			}
			if last := evs[len(evs)-1]; wantFinal && !isFinal(format, last.ev) {
				t.Errorf("the stream does not end with its final result event")
			}
			if name == "stall" {
				if longest < 15*time.Minute {
					t.Errorf("longest gap %v, want a stall of at least 15m", longest)
				}
			} else if longest > 5*time.Second {
				t.Errorf("longest gap %v in a scenario without a stall", longest)
			}
		})
	}
}

func TestLoopRepeatsOneCallByteForByte(t *testing.T) {
	// The identical call as each format prints its arguments.
	calls := map[string]string{
		"pi":       `"name":"grep","arguments":{"pattern":"func Reconcile","path":"."}`,
		"claude":   `"name":"Grep","input":{"pattern":"func Reconcile","path":"."}`,
		"codex":    `"type":"item.started","item":{"id":"`,
		"opencode": `"tool":"grep","state":{"status":"completed","input":{"pattern":"func Reconcile","path":"."}`,
		"gemini":   `"tool_name":"search_file_content","tool_id":`,
	}
	for format, call := range calls {
		text := Generate()[format+"/identicalLoop"]
		if n := strings.Count(text, call); n < 90 {
			t.Errorf("%s loop repeats %q %d times, want at least 90", format, call, n)
		}
	}
	if n := strings.Count(Generate()["codex/identicalLoop"], `"command":"bash -lc 'grep -rn \"func Reconcile\" .'","aggregated_output":"","exit_code":null`); n != 100 {
		t.Errorf("codex loop starts the identical command %d times, want 100", n)
	}
}

func TestScripts(t *testing.T) {
	for _, s := range Scripts() {
		t.Run(s.Name, func(t *testing.T) {
			last := s.Msgs[len(s.Msgs)-1]
			switch s.Name {
			case "healthy", "identicalLoop", "silentRun", "overspend", "stall":
				if last.Stop != "end" || !s.Result {
					t.Errorf("ends with stop %q, result %v; want end with a result", last.Stop, s.Result)
				}
			case "whitespace", "lengthStop":
				if last.Stop != "length" {
					t.Errorf("ends with stop %q, want length", last.Stop)
				}
			case "noresult":
				if s.Result {
					t.Error("noresult has a final result")
				}
			}
			switch s.Name {
			case "silentRun":
				quiet := 0
				for _, m := range s.Msgs[1:] {
					if m.speaks() {
						break
					}
					quiet++
				}
				if quiet != 16 || !s.Msgs[0].speaks() {
					t.Errorf("%d tool-only messages after one that spoke, want 16", quiet)
				}
			case "whitespace":
				ws := 0
				for _, d := range last.Thinking {
					if strings.TrimSpace(d) == "" {
						ws++
					}
				}
				if ws < 128 {
					t.Errorf("%d whitespace-only deltas, want at least 128", ws)
				}
			case "overspend":
				if c := tenThousandths(sumCost(s)); c < 30000 {
					t.Errorf("costs %s in all, want well past a 1-3 USD cap", sumCost(s))
				}
			}
		})
	}
}

func TestCostArithmetic(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{{"0.36", 3600}, {"0.0077", 77}, {"3", 30000}, {"0.00001", 0}, {"12.5", 125000}}
	for _, tt := range tests {
		if got := tenThousandths(tt.in); got != tt.want {
			t.Errorf("tenThousandths(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	if got := sumCost(overspend()); got != "3.9030" {
		t.Errorf("overspend costs %s in all, want 3.9030", got)
	}
}

// Every renderer plays a CLI's format: none is left out of Formats.
func TestEveryFormatRenders(t *testing.T) {
	for f := range renderers {
		if !slices.Contains(Formats, f) {
			t.Errorf("renderer of %s: no CLI of agents.CLIs has that format", f)
		}
	}
}
