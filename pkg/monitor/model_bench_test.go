package monitor

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// modelDeltas are a model's answers as the gateway hands them over: about
// 1 MiB of prose and code (quotes, backslashes, newlines, tabs, non-ASCII:
// what FeedModel escapes) in deltas of 1 to 40 bytes, a message end every
// 400 deltas.
func modelDeltas() []ModelEvent {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	genText(r, &b, 1<<20)
	text := []byte(b.String())
	var evs []ModelEvent
	for n := 0; len(text) > 0; n++ {
		k := min(1+r.IntN(40), len(text))
		evs = append(evs, ModelEvent{Delta: text[:k], Thinking: n%7 == 0})
		text = text[k:]
		if n%400 == 399 {
			evs = append(evs, ModelEvent{End: true, Model: "gpt-5-codex", Usage: Usage{Input: 2000, Output: 400}, Stop: StopToolUse})
		}
	}
	return evs
}

// feedModelAll feeds every event to a metered codex engine (codex's stdout
// hides its deltas: the engine takes the model's).
func feedModelAll(e *Engine, evs []ModelEvent) {
	for i := range evs {
		e.FeedModel(evs[i], time.Time{})
	}
}

func modelEngine(tb testing.TB) *Engine {
	e, err := New(Options{Format: FormatCodex, Guards: benchGuards(), Metered: true})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkFeedModelDelta is FeedModel's cost per model delta.
func BenchmarkFeedModelDelta(b *testing.B) {
	evs := modelDeltas()
	e := modelEngine(b)
	feedModelAll(e, evs) // warm up: the escape buffer at full size
	size := 0
	for _, ev := range evs {
		size += len(ev.Delta)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		feedModelAll(e, evs)
	}
	reportCPU(b, cpu, size)
	b.StopTimer()
	if len(e.f.Trips) != 0 {
		b.Fatalf("the deltas tripped: %+v", e.f.Trips)
	}
	b.ReportMetric(float64(len(evs)), "events/op")
}

// TestZeroAllocsFeedModel pins the steady state: a model delta, and a
// message end of a model priced already, allocate nothing.
func TestZeroAllocsFeedModel(t *testing.T) {
	evs := modelDeltas()
	e := modelEngine(t)
	feedModelAll(e, evs)
	if a := testing.AllocsPerRun(3, func() { feedModelAll(e, evs) }); a != 0 {
		t.Fatalf("%v allocations per pass over %d model events, want 0", a, len(evs))
	}
	if len(e.f.Trips) != 0 || !e.f.ModelDeltas {
		t.Fatalf("the deltas were not read, or tripped: %+v", e.f.Trips)
	}
}
