package sidecar

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// On each real CLI's identical loop, the sidecar lets the first three calls
// through by id and by key, refuses the fourth (the tripping one) with the
// trip's message, and after it refuses every call it has not judged.
func TestJudgeCallsRealStreams(t *testing.T) {
	for _, format := range []string{"claude", "codex", "gemini", "opencode", "pi"} {
		t.Run(format, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "pkg", "monitor", "testdata", "real", format, "identicalLoop.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			g := monitor.DefaultGuards()
			g.NudgeDelivery = monitor.NudgeDeliveryFile
			eng, err := monitor.New(monitor.Options{Format: format, Guards: g, Prices: monitor.DefaultPrices()})
			if err != nil {
				t.Fatal(err)
			}
			var c Calls
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
