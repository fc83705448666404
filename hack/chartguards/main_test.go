package main

import (
	"os"
	"testing"

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
