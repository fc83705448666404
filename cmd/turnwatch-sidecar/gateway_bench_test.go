//go:build !turnwatch_nodrill

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkGatewayPeakMemory is the real `turnwatch-sidecar gateway`
// process's peak resident set (VmHWM) while it proxies, metering, one
// request of a 1 MiB body answered by a long stream (Anthropic Messages
// events: 32 MiB of 1 KiB text deltas), without and with the deltas read,
// and, as load=idle, after one small request. The bound: under 24 MiB.
//
//	go test ./cmd/turnwatch-sidecar -run '^$' -bench GatewayPeakMemory -benchtime 1x -count 3
func BenchmarkGatewayPeakMemory(b *testing.B) {
	bin := buildSidecar(b, "")
	up := httptest.NewServer(http.HandlerFunc(longStream))
	defer up.Close()
	for _, in := range []struct {
		name         string
		body, deltas int
		format       string
	}{
		{"idle", 100, 1, "claude"},
		{"body1MiB-stream32MiB", 1 << 20, 32 << 10, "claude"},
		// codex's deltas are read from the model's side (agents.ModelSide).
		{"body1MiB-stream32MiB-deltas", 1 << 20, 32 << 10, "codex"},
	} {
		b.Run("load="+in.name, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				r := startGateway(b, bin, nil, "--format", in.format, "--upstream", up.URL)
				url := fmt.Sprintf("%s/v1/messages?deltas=%d", r.url, in.deltas)
				resp, err := http.Post(url, "application/json", io.LimitReader(filler{}, int64(in.body)))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || n < int64(in.deltas)<<10 {
					b.Fatalf("read %d bytes, status %d: %v", n, resp.StatusCode, err)
				}
				hwm, err := peakOf(r.cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, hwm)
				if !r.waitLog(`"end":true`) {
					b.Errorf("no message end logged:\n%s", r.log())
				}
			}
			b.ReportMetric(float64(peak)/1024, "peak-MiB")
		})
	}
}

// longStream reads the request body and answers with a Messages stream of
// ?deltas= text deltas of 1 KiB each.
func longStream(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	var n int
	fmt.Sscan(r.URL.Query().Get("deltas"), &n)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":300000,\"output_tokens\":1}}}\n\n")
	delta := fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", strings.Repeat("word ", 1024/5))
	for range n {
		io.WriteString(w, delta)
	}
	fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":%d}}\n\n", n*200)
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

// filler reads as endless JSON-ish bytes.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
