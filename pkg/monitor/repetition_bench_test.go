package monitor

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkRepetition measures the repeated-text fold alone on the
// benchmark stream's kind of text, per delta byte (raw, escaped).
func BenchmarkRepetition(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	var deltas [][]byte
	size := 0
	for size < 1<<20 {
		var d strings.Builder
		genText(r, &d, 200+r.IntN(1800))
		raw, _ := json.Marshal(d.String())
		deltas = append(deltas, raw[1:len(raw)-1])
		size += len(raw) - 2
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	b.ReportAllocs()
	var t repeatTracker
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu, size) }()
	for range b.N {
		for i, d := range deltas {
			if i%40 == 0 {
				t = repeatTracker{}
			}
			t.feedRaw(d, 2048)
		}
	}
}
