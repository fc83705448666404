//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// report collects what the run measured. Wall-clock times are reported,
// never asserted: this machine is shared and slow.
type report struct {
	mu      sync.Mutex
	timings []timing
	series  map[string][]time.Duration
	order   []string
	notes   []string
	blocks  []block
}

// block is a titled piece of output the report shows as it was printed.
type block struct{ title, text string }

type timing struct {
	name string
	d    time.Duration
}

func newReport() *report { return &report{series: map[string][]time.Duration{}} }

func (r *report) add(name string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timings = append(r.timings, timing{name, d})
}

// sample adds one measurement to a series reported as percentiles.
func (r *report) sample(series string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.series[series]; !ok {
		r.order = append(r.order, series)
	}
	r.series[series] = append(r.series[series], d)
}

// addBlock adds output (a table) to the report, shown as printed.
func (r *report) addBlock(title, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocks = append(r.blocks, block{title, text})
}

func (r *report) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// percentile returns the nearest-rank percentile p (0-100) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	rank := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[min(max(rank, 0), len(ds)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func (r *report) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "## End-to-end\n\n")
	fmt.Fprintf(&b, "Measured by `make test-e2e` (test/e2e) on %s, %d cores, %s/%s, %s.\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "Reported, not asserted. Latencies run from the kubelet's timestamp of the agent's\n")
	fmt.Fprintf(&b, "tripping line (`kubectl logs --timestamps`) to the moment a watch on this machine saw the result.\n\n")
	if len(r.order) > 0 {
		fmt.Fprintf(&b, "| latency | n | p50 | p99 | min | max |\n|---|---|---|---|---|---|\n")
		for _, name := range r.order {
			ds := append([]time.Duration{}, r.series[name]...)
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", name, len(ds),
				ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(ds[0]), ms(ds[len(ds)-1]))
		}
		b.WriteString("\n")
	}
	if len(r.timings) > 0 {
		fmt.Fprintf(&b, "| step | wall clock |\n|---|---|\n")
		for _, t := range r.timings {
			fmt.Fprintf(&b, "| %s | %.1f s |\n", t.name, t.d.Seconds())
		}
		b.WriteString("\n")
	}
	for _, bl := range r.blocks {
		fmt.Fprintf(&b, "%s:\n\n```\n%s\n```\n\n", bl.title, strings.TrimRight(bl.text, "\n"))
	}
	for _, n := range r.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	b.WriteString(`- A stall trips up to 1 s after its timeout: the sidecar checks the silence on a 1 s tick,
  counted from the kubelet's timestamp of the last line.
- The agent's end waits for the kubelet: the controller sets ` + "`activeDeadlineSeconds`" + ` and the
  kubelet stops the containers on its next sync (the template asks for a 5 s grace, raised to 25 s for the sidecar; the fake agent
  exits at once on SIGTERM).
- Figures from a busy run of the same machine and the node's costs: docs/e2e.md.
`)
	return b.String()
}

// write saves the report under bin/e2e and, when TURNWATCH_E2E_REPORT names
// a file, replaces that file's "## End-to-end" section with it.
func (r *report) write() {
	md := r.markdown()
	_ = os.WriteFile(filepath.Join(env.artifacts, "report.md"), []byte(md), 0o644)
	fmt.Fprintf(os.Stderr, "\n%s\n", md)
	target := os.Getenv("TURNWATCH_E2E_REPORT")
	if target == "" {
		return
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(env.root, target)
	}
	old, _ := os.ReadFile(target)
	if err := os.WriteFile(target, []byte(replaceSection(string(old), md)), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: writing %s: %v\n", target, err)
	}
}

// replaceSection swaps the "## End-to-end" section of doc (up to the next
// "## " heading) for section, or appends it.
func replaceSection(doc, section string) string {
	const head = "## End-to-end\n"
	i := strings.Index(doc, head)
	if i < 0 {
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		if doc == "" {
			doc = "# Performance\n\n"
		}
		return doc + section
	}
	rest := doc[i+len(head):]
	end := strings.Index(rest, "\n## ")
	if end < 0 {
		return doc[:i] + section
	}
	return doc[:i] + section + rest[end+1:]
}
