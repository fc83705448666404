package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// The short-line shape: a long, tool-heavy pi turn whose model messages are
// short (a sentence or a paragraph, then a tool call), streamed in small
// deltas. Every message_update still restates the whole partial message
// twice, so the lines are 1-4 KB: many more lines per byte than the long
// stream, and the per-line costs (finding the line's end, reading its type,
// the fold) weigh more than the per-byte ones.
var (
	shortOnce sync.Once
	short     benchStream
)

func shortData() benchStream {
	shortOnce.Do(func() { short = genPiShortStream(32 << 20) })
	return short
}

func genPiShortStream(size int) benchStream {
	r := rand.New(rand.NewPCG(3, 4))
	var out bytes.Buffer
	var st benchStream
	line := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		st.lines++
	}
	line(map[string]any{"type": "agent_start"})
	cost := 0.0
	for msg := 0; out.Len() < size; msg++ {
		line(map[string]any{"type": "turn_start"})
		var text strings.Builder
		call := fmt.Sprintf("toolu_%06d", msg)
		args := map[string]any{"command": fmt.Sprintf("go test ./pkg/%d/...", msg%97)}
		partial := func(withCall bool) map[string]any {
			c := []any{map[string]any{"type": "text", "text": text.String()}}
			if withCall {
				c = append(c, map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": args})
			}
			return piMsg(c, cost, "toolUse")
		}
		line(map[string]any{"type": "message_start", "message": partial(false)})
		target := 100 + r.IntN(1400) // the text grows to 0.1..1.5 KB: lines of 1..4 KB
		for text.Len() < target {
			var d strings.Builder
			genText(r, &d, 10+r.IntN(90))
			text.WriteString(d.String())
			cost += 0.000013
			p := partial(false)
			line(map[string]any{"type": "message_update", "message": p,
				"assistantMessageEvent": map[string]any{"type": "text_delta", "contentIndex": 0, "delta": d.String(), "partial": p}})
			st.deltas++
		}
		p := partial(true)
		line(map[string]any{"type": "message_update", "message": p,
			"assistantMessageEvent": map[string]any{"type": "toolcall_end", "contentIndex": 1,
				"toolCall": map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": args}, "partial": p}})
		line(map[string]any{"type": "message_end", "message": p})
		line(map[string]any{"type": "tool_execution_start", "toolCallId": call, "toolName": "bash", "args": args})
		line(map[string]any{"type": "tool_execution_end", "toolCallId": call, "toolName": "bash",
			"result": map[string]any{"content": []any{piText("ok\tturnwatch.dev/pkg 0.41s")}}, "isError": false})
		line(map[string]any{"type": "turn_end", "message": p, "toolResults": []any{}})
	}
	st.data = out.Bytes()
	return st
}

// BenchmarkShortLines is BenchmarkThroughput on the short-line stream: the
// engine, the naive baseline (encoding/json into map[string]any per line)
// and the line splitter alone, on the same bytes in the same run.
// Compare with: benchstat -col /impl
func BenchmarkShortLines(b *testing.B) {
	st := shortData()
	b.Run("impl=engine", func(b *testing.B) {
		e, err := New(Options{Format: FormatPi, Guards: benchGuards()})
		if err != nil {
			b.Fatal(err)
		}
		r := bytes.NewReader(st.data)
		lr := NewLineReader(r, 0)
		feedAll(e, lr, r, st.data)
		b.SetBytes(int64(len(st.data)))
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		for range b.N {
			feedAll(e, lr, r, st.data)
		}
		reportCPU(b, cpu, len(st.data))
		b.StopTimer()
		if len(e.trips) != 0 {
			b.Fatalf("the stream tripped: %+v", e.trips)
		}
		reportShape(b, st)
	})
	b.Run("impl=naive", func(b *testing.B) {
		b.SetBytes(int64(len(st.data)))
		b.ReportAllocs()
		cpu := cpuTime()
		defer func() { reportCPU(b, cpu, len(st.data)) }()
		for range b.N {
			sc := bufio.NewScanner(bytes.NewReader(st.data))
			sc.Buffer(make([]byte, 1<<20), DefaultMaxLine)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportShape(b, st)
	})
	b.Run("impl=lines", func(b *testing.B) {
		b.SetBytes(int64(len(st.data)))
		b.ReportAllocs()
		r := bytes.NewReader(st.data)
		lr := NewLineReader(r, 0)
		cpu := cpuTime()
		for range b.N {
			r.Reset(st.data)
			lr.r, lr.start, lr.end, lr.err = r, 0, 0, nil
			for {
				if _, ok := lr.Next(); !ok {
					break
				}
			}
		}
		reportCPU(b, cpu, len(st.data))
	})
}

func reportShape(b *testing.B, st benchStream) {
	b.ReportMetric(float64(st.deltas), "deltas/op")
	b.ReportMetric(float64(len(st.data))/float64(st.lines), "B/line")
}

// TestZeroAllocsShortLines pins the steady state on short lines too.
func TestZeroAllocsShortLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32 MiB stream")
	}
	st := shortData()
	e, _ := New(Options{Format: FormatPi, Guards: benchGuards()})
	r := bytes.NewReader(st.data)
	lr := NewLineReader(r, 0)
	feedAll(e, lr, r, st.data)
	if a := testing.AllocsPerRun(3, func() { feedAll(e, lr, r, st.data) }); a != 0 {
		t.Fatalf("%v allocations per pass over %d deltas, want 0", a, st.deltas)
	}
	if e.Report().Lines == 0 {
		t.Fatal("nothing fed")
	}
}
