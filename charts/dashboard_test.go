package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard these tests read.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`\bturnwatch_[a-z_]+`)

// definedMetrics are the turnwatch metric names the manager's source defines.
func definedMetrics(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "controllers", "*.go"))
	pkgs, _ := filepath.Glob(filepath.Join(repoRoot, "controllers", "*", "*.go"))
	files = append(files, pkgs...)
	def := regexp.MustCompile(`Name:\s+"(turnwatch_[a-z_]+)"`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, m := range def.FindAllStringSubmatch(string(mustRead(t, strings.TrimPrefix(f, repoRoot+"/"))), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 5 {
		t.Fatalf("found only %v in controllers/**/*.go", names)
	}
	return names
}

// docs/metrics.md lists every metric the manager defines.
func TestMetricsDocumented(t *testing.T) {
	doc := string(mustRead(t, filepath.Join("docs", "metrics.md")))
	for _, n := range definedMetrics(t) {
		if !strings.Contains(doc, "| `"+n+"` |") {
			t.Errorf("docs/metrics.md has no table row for %s", n)
		}
	}
}

// The dashboard is off by default; on, it is one ConfigMap with Grafana's
// discovery label, valid JSON, the panels the issue asks for, and queries
// that name only metrics the manager defines.
func TestGrafanaDashboard(t *testing.T) {
	for _, o := range render(t) {
		if strings.HasSuffix(o.meta("name"), "-dashboard") {
			t.Fatalf("a dashboard ConfigMap rendered by default: %v", o.meta("name"))
		}
	}
	objs := render(t, "--set", "grafanaDashboard.enabled=true")
	cm := find(t, objs, "ConfigMap", namespace, "-dashboard")
	labels, _ := cm["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v lack grafana_dashboard: \"1\"", labels)
	}
	data, _ := cm["data"].(map[string]any)
	raw, _ := data["turnwatch.json"].(string)
	var d dashboard
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	file, err := os.ReadFile(filepath.Join(repoRoot, chartDir, "files", "grafana-dashboard.json"))
	if err != nil || strings.TrimSpace(string(file)) != strings.TrimSpace(raw) {
		t.Errorf("the ConfigMap's JSON differs from files/grafana-dashboard.json (%v)", err)
	}
	defined := definedMetrics(t)
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !slices.Contains(defined, base) {
					t.Errorf("panel %q queries %s, which the manager does not define", p.Title, m)
				}
			}
		}
	}
	for _, want := range []string{"Trips by detector", "Would-trips by detector (audit)", "Rerolls by class", "Faults by class", "Cost by namespace (USD)", "Turn duration"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q in %v", want, titles)
		}
	}
	// Elsewhere when asked.
	objs = render(t, "--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.namespace=monitoring")
	find(t, objs, "ConfigMap", "monitoring", "-dashboard")
}
