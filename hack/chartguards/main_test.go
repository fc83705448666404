package main

import (
	"os"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// TestChartIsWritten: the chart's guards are what the detector table writes
// (run `make chart-sync` when this fails).
func TestChartIsWritten(t *testing.T) {
	for _, f := range []struct {
		path    string
		rewrite func([]byte, []monitor.Guard) ([]byte, error)
	}{
		{"../../charts/turnwatch/values.yaml", spliceValues},
		{"../../charts/turnwatch/values.schema.json", spliceSchema},
	} {
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.rewrite(src, monitor.AllGuards())
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		if string(out) != string(src) {
			t.Errorf("%s is stale: run make chart-sync", f.path)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{2 * time.Second, "2s"},
		{90 * time.Second, "1m30s"},
		{2 * time.Hour, "2h"},
		{1500 * time.Millisecond, "1.5s"},
		{0, "0s"},
	} {
		if got := shortDuration(tc.in); got != tc.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
