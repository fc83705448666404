package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchStream is a generated, realistic pi --mode json stream: model
// messages that think, write prose and code (quotes, backslashes,
// newlines, tabs, non-ASCII), and call tools; every message_update line
// restates the whole partial message twice (message and
// assistantMessageEvent.partial, as pi does), so delta lines grow from
// about 10 KB to about 100 KB within each message.
type benchStream struct {
	data   []byte
	deltas int
	lines  int
}

var (
	benchOnce sync.Once
	bench     benchStream
)

func benchData() benchStream {
	benchOnce.Do(func() { bench = genPiStream(32 << 20) })
	return bench
}

var words = strings.Fields(`the detector engine reads each line once and folds it into counters while a
model writes code, explains its reasoning, and calls tools; résumé naïve über
façade 東京 ✓ — café`)

var codeLines = []string{
	`func (s *scanner) str() ([]byte, bool) {`,
	"\tif s.peek() != '\"' {",
	`		return nil, s.fail() // "bad"`,
	`	fmt.Printf("%q\n", path)`,
	`	re := regexp.MustCompile("\\d+\\.\\d+")`,
	`}`,
}

// genText appends about n bytes of prose and code.
func genText(r *rand.Rand, b *strings.Builder, n int) {
	for b.Len() < n {
		if r.IntN(6) == 0 {
			b.WriteString("\n```go\n")
			for i := 0; i < 4+r.IntN(6); i++ {
				b.WriteString(codeLines[r.IntN(len(codeLines))])
				b.WriteByte('\n')
			}
			b.WriteString("```\n")
			continue
		}
		for i := 0; i < 12+r.IntN(20); i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString(". ")
		if r.IntN(4) == 0 {
			b.WriteString("\n\n")
		}
	}
}

func genPiStream(size int) benchStream {
	r := rand.New(rand.NewPCG(1, 2))
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
		var think strings.Builder
		genText(r, &think, 8<<10)
		var text strings.Builder
		call := fmt.Sprintf("toolu_%06d", msg)
		args := map[string]any{"path": fmt.Sprintf("src/file%d.go", msg), "content": "package main\n"}
		content := func(withCall bool) []any {
			c := []any{map[string]any{"type": "thinking", "thinking": think.String()},
				map[string]any{"type": "text", "text": text.String()}}
			if withCall {
				c = append(c, map[string]any{"type": "toolCall", "id": call, "name": "write", "arguments": args})
			}
			return c
		}
		partial := func(withCall bool) map[string]any {
			return piMsg(content(withCall), cost, "toolUse")
		}
		line(map[string]any{"type": "message_start", "message": partial(false)})
		target := 40<<10 + r.IntN(10<<10) // the text grows to 40..50 KB: lines to ~100 KB
		for text.Len() < target {
			var d strings.Builder
			genText(r, &d, 200+r.IntN(1800))
			text.WriteString(d.String())
			cost += 0.000013
			p := partial(false)
			line(map[string]any{"type": "message_update", "message": p,
				"assistantMessageEvent": map[string]any{"type": "text_delta", "contentIndex": 1, "delta": d.String(), "partial": p}})
			st.deltas++
		}
		p := partial(true)
		line(map[string]any{"type": "message_update", "message": p,
			"assistantMessageEvent": map[string]any{"type": "toolcall_start", "contentIndex": 2, "partial": p}})
		line(map[string]any{"type": "message_update", "message": p,
			"assistantMessageEvent": map[string]any{"type": "toolcall_end", "contentIndex": 2,
				"toolCall": map[string]any{"type": "toolCall", "id": call, "name": "write", "arguments": args}, "partial": p}})
		line(map[string]any{"type": "message_end", "message": p})
		line(map[string]any{"type": "tool_execution_start", "toolCallId": call, "toolName": "write", "args": args})
		line(map[string]any{"type": "tool_execution_end", "toolCallId": call, "toolName": "write",
			"result": map[string]any{"content": []any{piText("ok")}}, "isError": false})
		line(map[string]any{"type": "turn_end", "message": p, "toolResults": []any{}})
	}
	st.data = out.Bytes()
	return st
}

// benchGuards keep the generated stream from tripping: it is one long turn
// of honest work, replayed over and over.
func benchGuards() Guards {
	g := DefaultGuards()
	g.StepBudget = 0
	return g
}

// BenchmarkThroughput compares the engine with a naive baseline (encoding/
// json into map[string]any per line) on the same stream in the same run.
// Compare with: benchstat -col /impl
func BenchmarkThroughput(b *testing.B) {
	benchImpls(b, benchData(), reportPerDelta)
}

// benchImpls runs the engine, the naive decoder and the bare line splitter
// over one stream, each as a sub-benchmark (impl=engine|naive|lines), so
// that every figure has its baseline from the same run; report adds the
// stream's own metrics.
func benchImpls(b *testing.B, st benchStream, report func(*testing.B, benchStream)) {
	b.Run("impl=engine", func(b *testing.B) {
		e, err := New(Options{Format: FormatPi, Guards: benchGuards()})
		if err != nil {
			b.Fatal(err)
		}
		r := bytes.NewReader(st.data)
		lr := NewLineReader(r, 0)
		feedAll(e, lr, r, st.data) // warm up: buffers at full size
		b.SetBytes(int64(len(st.data)))
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		for range b.N {
			feedAll(e, lr, r, st.data)
		}
		reportCPU(b, cpu, len(st.data))
		b.StopTimer()
		if len(e.f.Trips) != 0 {
			b.Fatalf("the stream tripped: %+v", e.f.Trips)
		}
		report(b, st)
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
		report(b, st)
	})
	b.Run("impl=lines", func(b *testing.B) { // the ceiling: splitting lines only
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

// cpuTime is the process's user+system CPU time. On a shared machine the
// wall clock measures the neighbours too; CPU time per byte is what "per
// core" means, and it counts the garbage collector's threads as well.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration, size int) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/d.Seconds()/1e6, "MB/cpu-s")
	}
}

func reportPerDelta(b *testing.B, st benchStream) {
	b.ReportMetric(float64(st.deltas), "deltas/op")
}

// feedAll feeds the whole stream through a reused line reader.
func feedAll(e *Engine, lr *LineReader, r *bytes.Reader, data []byte) {
	r.Reset(data)
	lr.r, lr.start, lr.end, lr.err = r, 0, 0, nil
	_ = Loop{}.Run(e, lr) // a bytes.Reader does not fail
}

// TestZeroAllocsPerDelta pins the steady state: feeding delta lines (and
// the whole generated stream) allocates nothing.
func TestZeroAllocsPerDelta(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32 MiB stream")
	}
	st := benchData()
	e, _ := New(Options{Format: FormatPi, Guards: benchGuards()})
	r := bytes.NewReader(st.data)
	lr := NewLineReader(r, 0)
	feedAll(e, lr, r, st.data)
	if a := testing.AllocsPerRun(3, func() { feedAll(e, lr, r, st.data) }); a != 0 {
		t.Fatalf("%v allocations per pass over %d deltas, want 0", a, st.deltas)
	}
}

// repeatReader serves a stream of size bytes by repeating data.
type repeatReader struct {
	data []byte
	off  int
	left int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	if int64(n) > r.left {
		n = int(r.left)
	}
	r.off = (r.off + n) % len(r.data)
	r.left -= int64(n)
	return n, nil
}

// BenchmarkMemory feeds streams from 1 MB to 1 GB through a fresh reader
// and engine: B/op (everything allocated per pass) and live-MB (the heap
// the engine and reader still hold at the end, over the benchmark's own
// data) stay flat as the stream grows 1000-fold.
func BenchmarkMemory(b *testing.B) {
	st := benchData()
	for _, size := range []int64{1 << 20, 16 << 20, 256 << 20, 1 << 30} {
		b.Run(fmt.Sprintf("stream=%dMB", size>>20), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			var heap uint64
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base) // the generated corpus itself is not the engine's
			for range b.N {
				e, _ := New(Options{Format: FormatPi, Guards: benchGuards()})
				lr := NewLineReader(&repeatReader{data: st.data, left: size}, 0)
				_ = Loop{}.Run(e, lr)
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = max(heap, ms.HeapInuse-min(ms.HeapInuse, base.HeapInuse))
				runtime.KeepAlive(e)
				runtime.KeepAlive(lr)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/(1<<20), "live-MB")
		})
	}
}

// TestWriteBenchStream writes the generated stream to $TURNWATCH_BENCH_STREAM
// (for measuring `wc -l` on the same bytes); skipped otherwise.
func TestWriteBenchStream(t *testing.T) {
	path := os.Getenv("TURNWATCH_BENCH_STREAM")
	if path == "" {
		t.Skip("set TURNWATCH_BENCH_STREAM to a file path")
	}
	if err := os.WriteFile(path, benchData().data, 0o644); err != nil {
		t.Fatal(err)
	}
}
