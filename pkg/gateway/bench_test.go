package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// BenchmarkFirstByte is the delay the gateway adds to an answer's first
// byte: each iteration sends the same streamed request of each API to the
// scripted model on loopback, once straight and once through the gateway
// (on loopback too, metering with deltas), and times the first byte of
// each answer. It reports both p50 and p99 and their differences, the
// delay the gateway added (the bound: 5 ms p99).
//
//	go test ./pkg/gateway -run '^$' -bench FirstByte -benchtime 2000x
func BenchmarkFirstByte(b *testing.B) {
	sc, _ := scriptedmodel.Lookup("healthy")
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, MaxLog: 1})
	if err != nil {
		b.Fatal(err)
	}
	modelURL, stop, err := model.ServeLoopback()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	up, _ := url.Parse(modelURL)
	g, err := New(Options{Upstream: up, Deltas: true, Observe: func(monitor.ModelEvent) {}})
	if err != nil {
		b.Fatal(err)
	}
	gs := httptest.NewServer(g)
	defer gs.Close()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	var direct, via []time.Duration
	for i := 0; b.Loop(); i++ {
		req := requests[i%len(requests)]
		body := fmt.Sprintf(req.body, "true")
		direct = append(direct, firstByte(b, client, modelURL+req.path, body))
		via = append(via, firstByte(b, client, gs.URL+req.path, body))
	}
	p50d, p99d := percentiles(direct)
	p50g, p99g := percentiles(via)
	b.ReportMetric(ms(p50d), "direct-p50-ms")
	b.ReportMetric(ms(p99d), "direct-p99-ms")
	b.ReportMetric(ms(p50g), "gateway-p50-ms")
	b.ReportMetric(ms(p99g), "gateway-p99-ms")
	b.ReportMetric(ms(p50g-p50d), "added-p50-ms")
	b.ReportMetric(ms(p99g-p99d), "added-p99-ms")
	if c := g.Counts(); c.Unmetered != 0 {
		b.Errorf("counts %+v", c)
	}
}

// firstByte posts body and returns how long its answer's first body byte
// took; the rest is read and dropped.
func firstByte(b *testing.B, c *http.Client, url, body string) time.Duration {
	start := time.Now()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
	return d
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkMeter is the meter alone on a long Messages stream (4 MiB of
// 1 KiB text deltas, in 32 KiB reads as the proxy copies), without and with
// the deltas read: its speed and what it allocates.
func BenchmarkMeter(b *testing.B) {
	var s strings.Builder
	s.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
	for range 4 << 10 {
		fmt.Fprintf(&s, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", strings.Repeat("word ", 1024/5))
	}
	s.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n")
	stream := []byte(s.String())
	for _, deltas := range []bool{false, true} {
		b.Run(fmt.Sprintf("deltas=%v", deltas), func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				a := newAnswer(modelapi.NameAnthropic, true, deltas, func(monitor.ModelEvent) {})
				for p := stream; len(p) > 0; {
					n := min(len(p), 32<<10)
					a.write(p[:n])
					p = p[n:]
				}
				if !a.finish() {
					b.Fatal("unmetered")
				}
			}
		})
	}
}
