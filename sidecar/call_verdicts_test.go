package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// judgeRealLoop feeds a real CLI's recorded identical loop, with nudges
// delivered by file and the detectors of audit audited, to its trip (or
// its end), and returns what the sidecar judged of its calls.
func judgeRealLoop(t *testing.T, format string, audit []string) (*Calls, *monitor.Engine, []nudgefile.Verdict) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "pkg", "monitor", "testdata", "real", format, "identicalLoop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := monitor.DefaultGuards()
	g.NudgeDelivery = monitor.NudgeDeliveryFile
	eng, err := monitor.New(monitor.Options{Format: format, Guards: g, Prices: monitor.DefaultPrices(), Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	c := &Calls{}
	var vs []nudgefile.Verdict
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		v := eng.Feed(sc.Bytes(), time.Now())
		vs = append(vs, c.Judge(eng, v.Trip, true)...)
		if v.Trip != nil {
			break
		}
	}
	return c, eng, vs
}

// On each real CLI's identical loop, the sidecar lets the first three calls
// through by id and by key, refuses the fourth (the tripping one) with the
// trip's message, and after it refuses every call it has not judged.
func TestJudgeCallsRealStreams(t *testing.T) {
	for _, format := range agents.Formats() {
		t.Run(format, func(t *testing.T) {
			c, eng, vs := judgeRealLoop(t, format, nil)
			var file []byte
			for _, v := range vs {
				file = append(file, nudgefile.EncodeVerdict(v)...)
			}
			if len(vs) != 5 {
				t.Fatalf("verdicts %+v: want 4 calls and the closing one", vs)
			}
			for i, v := range vs[:4] {
				got, ok := nudgefile.FindVerdict(file, v.Call, "")
				byKey, keyOK := nudgefile.FindVerdict(file, "", v.Key)
				if !ok || !keyOK || got.Refuse != (i == 3) || byKey.Refuse != (i == 3) || v.Key == vs[0].Key && i > 0 {
					t.Errorf("call %d %+v: by id %+v, by key %+v", i+1, v, got, byKey)
				}
			}
			if last := vs[3]; last.Detector != "identicalCalls" || last.Message != "repeated an identical tool call 4 times" {
				t.Errorf("the tripping call's verdict %+v", last)
			}
			if v, ok := nudgefile.FindVerdict(file, "a-later-call", "later key"); !ok || !v.Refuse {
				t.Errorf("a call after the trip: %+v %v, want refused", v, ok)
			}
			if more := c.Judge(eng, nil, true); more != nil {
				t.Errorf("verdicts after the trip: %+v", more)
			}
		})
	}
}

// claudeCall is a claude assistant line with one whole tool call.
func claudeCall(id, name, args string) []byte {
	return []byte(`{"type":"assistant","message":{"id":"m_` + id + `","role":"assistant","content":[{"type":"tool_use","id":"` + id +
		`","name":"` + name + `","input":` + args + `}]},"session_id":"s"}`)
}

func refusingEngine(t *testing.T, format string) *monitor.Engine {
	t.Helper()
	g := monitor.DefaultGuards()
	g.NudgeDelivery, g.StepBudget, g.CycleRepeats = monitor.NudgeDeliveryFile, 0, 0
	eng, err := monitor.New(monitor.Options{Format: format, Guards: g})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// Calls remembers at most maxJudged ids and signatures however many calls
// come; a call whose id or tool name is too long to carry gets no line of
// its own but counts, so the calls after it keep their keys.
func TestCallsBounded(t *testing.T) {
	eng := refusingEngine(t, monitor.FormatClaude)
	var c Calls
	for i := range maxJudged + 100 {
		id := fmt.Sprintf("toolu_%d", i)
		eng.Feed(claudeCall(id, "Bash", fmt.Sprintf(`{"command":"echo %d"}`, i)), time.Time{})
		if vs := c.Judge(eng, nil, true); len(vs) != 1 || vs[0].Call != id {
			t.Fatalf("call %d: %+v", i, vs)
		}
	}
	s := c.State()
	if len(s.Judged) != maxJudged || len(s.Seen) != maxJudged {
		t.Errorf("remembers %d ids and %d signatures, want %d each", len(s.Judged), len(s.Seen), maxJudged)
	}
	if b, _ := json.Marshal(s); len(b) > 256<<10 { // docs/protocol.md: the checkpoint's size
		t.Errorf("the state is %d bytes in the checkpoint", len(b))
	} else {
		t.Logf("the state is %d bytes in the checkpoint", len(b))
	}
	args := `{"command":"ls"}`
	long := strings.Repeat("x", maxCallText+1)
	for i, call := range [][]byte{
		claudeCall("toolu_"+long, "Bash", args), // counted, no line
		claudeCall("toolu_b", long, args),       // another tool: counted apart, no line
		claudeCall("toolu_c", "Bash", args),
	} {
		eng.Feed(call, time.Time{})
		vs := c.Judge(eng, nil, true)
		if (i < 2) != (len(vs) == 0) {
			t.Errorf("call %d: %+v", i, vs)
		}
		if i == 2 && (len(vs) != 1 || vs[0].Key != nudgefile.CallKey("Bash", []byte(args), 2)) {
			t.Errorf("the call after one with a long id: %+v, want the second Bash ls", vs)
		}
	}
}

// Calls restored from its State (as the checkpoint carries it, in JSON)
// judges the rest of a stream as Calls that never stopped.
func TestCallsStateRestores(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "pkg", "monitor", "testdata", "real", "gemini", "identicalLoop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	judge := func(cut int) []nudgefile.Verdict {
		eng := refusingEngine(t, monitor.FormatGemini)
		var c Calls
		var vs []nudgefile.Verdict
		for i, l := range lines {
			if i == cut {
				b, _ := json.Marshal(c.State())
				var s CallsState
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
				c = Calls{}
				c.Restore(s)
			}
			v := eng.Feed(l, time.Time{})
			vs = append(vs, c.Judge(eng, v.Trip, true)...)
		}
		return vs
	}
	want := judge(-1)
	if len(want) != 5 || !want[3].Refuse {
		t.Fatalf("uninterrupted: %+v", want)
	}
	for cut := range lines {
		if got := judge(cut); !slices.Equal(got, want) {
			t.Errorf("restored before line %d: %+v\nwant %+v", cut+1, got, want)
		}
	}
}
