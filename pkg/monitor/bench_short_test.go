package monitor

import (
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
	line := func(v ordered) {
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		st.lines++
	}
	line(ordered{"type", "agent_start"})
	cost := 0.0
	for msg := 0; out.Len() < size; msg++ {
		line(ordered{"type", "turn_start"})
		var text strings.Builder
		call := fmt.Sprintf("toolu_%06d", msg)
		args := ordered{"command", fmt.Sprintf("go test ./pkg/%d/...", msg%97)}
		partial := func(withCall bool, stop string) ordered {
			c := []any{ordered{"type", "text", "text", text.String()}}
			if withCall {
				c = append(c, ordered{"type", "toolCall", "id", call, "name", "bash", "arguments", args})
			}
			return piOrderedMsg(c, cost, stop)
		}
		line(ordered{"type", "message_start", "message", partial(false, "")})
		target := 700 + r.IntN(900) // the text grows to 0.7..1.6 KB: lines of 1..4 KB, about 2.3 KB on average
		for text.Len() < target {
			var d strings.Builder
			genText(r, &d, 10+r.IntN(90))
			text.WriteString(d.String())
			cost += 0.000013
			p := partial(false, "")
			line(ordered{"type", "message_update", "message", p,
				"assistantMessageEvent", ordered{"type", "text_delta", "contentIndex", 0, "delta", d.String(), "partial", p}})
			st.deltas++
		}
		p := partial(true, "toolUse")
		line(ordered{"type", "message_update", "message", p,
			"assistantMessageEvent", ordered{"type", "toolcall_end", "contentIndex", 1,
				"toolCall", ordered{"type", "toolCall", "id", call, "name", "bash", "arguments", args}, "partial", p}})
		line(ordered{"type", "message_end", "message", p})
		line(ordered{"type", "tool_execution_start", "toolCallId", call, "toolName", "bash", "args", args})
		line(ordered{"type", "tool_execution_end", "toolCallId", call, "toolName", "bash",
			"result", ordered{"content", []any{ordered{"type", "text", "text", "ok\tturnwatch.dev/pkg 0.41s"}}}, "isError", false})
		line(ordered{"type", "turn_end", "message", p, "toolResults", []any{}})
	}
	st.data = out.Bytes()
	return st
}

// piOrderedMsg is an assistant message with its keys in pi's order.
func piOrderedMsg(content []any, cost float64, stop string) ordered {
	return ordered{"role", "assistant", "content", content, "api", "openai-responses", "provider", "openai", "model", "gpt-5.1-codex",
		"usage", ordered{"input", 10, "output", 5, "cacheRead", 0, "cacheWrite", 0, "totalTokens", 15,
			"cost", ordered{"input", 0, "output", 0, "cacheRead", 0, "cacheWrite", 0, "total", cost}},
		"stopReason", stop, "timestamp", 1767401001200}
}

// ordered is a JSON object written with its keys in the given order
// (alternating key, value), as pi writes them: "type" first. A Go map would
// sort them and put "type" after "assistantMessageEvent", which sends every
// line down the engine's rare path (find "type", then read from the top).
type ordered []any

func (o ordered) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(o[i])
		v, err := json.Marshal(o[i+1])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// BenchmarkShortLines is BenchmarkThroughput on the short-line stream: the
// engine, the naive baseline (encoding/json into map[string]any per line)
// and the line splitter alone, on the same bytes in the same run.
// Compare with: benchstat -col /impl
func BenchmarkShortLines(b *testing.B) {
	benchImpls(b, shortData(), reportShape)
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
	if rep := e.Report(); rep.Lines == 0 || rep.Unparsed != 0 || rep.Steps == 0 {
		t.Fatalf("the engine did not read the stream: %+v", rep)
	}
}

// TestShortLinesShape pins the stream's shape: lines of 1-4 KB.
func TestShortLinesShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32 MiB stream")
	}
	st := shortData()
	var n, in int
	for _, l := range bytes.Split(bytes.TrimSuffix(st.data, []byte("\n")), []byte("\n")) {
		if bytes.Contains(l, []byte(`"message_update"`)) {
			n++
			if len(l) >= 1000 && len(l) <= 4096 {
				in++
			}
		}
	}
	if in < n*95/100 {
		t.Fatalf("%d of %d message_update lines are 1-4 KB, want 95%%", in, n)
	}
	t.Logf("%d of %d message_update lines are 1-4 KB; %d B a line on average", in, n, len(st.data)/st.lines)
}
