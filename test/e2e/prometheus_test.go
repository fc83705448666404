//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prometheus is a real Prometheus server (Debian's package, installed by
// hack/prometheus.sh) on loopback, scraping the Helm-installed manager's
// metrics over HTTPS with a token bound to the metrics-reader ClusterRole.
type prometheus struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	remove func() // the scraper's ServiceAccount and binding
}

// startPrometheus starts it; stop ends it and removes the scraper's identity.
func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	bin, err := script(env.root, "hack/prometheus.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	token, remove := metricsReaderToken(t, "prometheus")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	// The manager's certificate is self-signed (controller-runtime's default);
	// what the scrape proves is that the reader's token is let in.
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: turnwatch
    scheme: https
    tls_config:
      insecure_skip_verify: true
    authorization:
      credentials_file: %s
    static_configs:
      - targets: ["%s"]
`, tokenFile, strings.TrimSuffix(strings.TrimPrefix(localMetricsURL, "https://"), "/metrics"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	p := &prometheus{addr: addr, log: filepath.Join(env.artifacts, "prometheus.log"), remove: remove}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	err = waitFor(context.Background(), time.Minute, "Prometheus to be ready", func() (bool, error) {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		out, _ := os.ReadFile(p.log)
		t.Fatalf("%v\n%s", err, tail(string(out), 20))
	}
	// The first scrape reads the counters at zero (controllers/shared/metrics_init.go),
	// so the trips that follow are an increase, not where the series start.
	err = waitFor(context.Background(), time.Minute, "Prometheus to scrape the manager once", func() (bool, error) {
		s, err := p.query(`up{job="turnwatch"}`)
		return err == nil && len(s) == 1 && s[0].float() == 1, nil
	})
	if err != nil {
		out, _ := os.ReadFile(p.log)
		t.Fatalf("%v\n%s", err, tail(string(out), 20))
	}
	logf("Prometheus %s on http://%s scrapes %s (log %s)", bin, addr, localMetricsURL, p.log)
	return p
}

func (p *prometheus) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
	if p.remove != nil {
		p.remove()
		p.remove = nil
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// sample is one element of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float() float64 {
	str, _ := s.Value[1].(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// query runs an instant PromQL query.
func (p *prometheus) query(expr string) ([]sample, error) {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, body.Error)
	}
	return body.Data.Result, nil
}

// checkDashboardQueries: once Prometheus has scraped the trips and the
// audited detectors' would-trips, every query of every panel of the chart's
// dashboard returns data (a real number), with $__rate_interval as Grafana
// would fill it for a short range.
func checkDashboardQueries(t *testing.T, p *prometheus, wantTrips, wantWouldTrips int) {
	t.Helper()
	scraped := func(mode string, want int) bool {
		s, err := p.query(`sum(turnwatch_trips_total{mode="` + mode + `"})`)
		return err == nil && len(s) == 1 && s[0].float() >= float64(want)
	}
	err := waitFor(context.Background(), time.Minute, "Prometheus to scrape the trips", func() (bool, error) {
		return scraped("enforce", wantTrips) && scraped("audit", wantWouldTrips), nil
	})
	if err != nil {
		up, _ := p.query(`up`)
		out, _ := os.ReadFile(p.log)
		t.Fatalf("%v\nup: %+v\n%s", err, up, tail(string(out), 20))
	}
	raw, err := os.ReadFile(filepath.Join(env.root, "charts", "turnwatch", "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, panel := range d.Panels {
		for _, tg := range panel.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m")
			s, err := p.query(expr)
			if err != nil {
				t.Errorf("panel %q: %v", panel.Title, err)
				continue
			}
			var vals []string
			real := false
			for _, x := range s {
				vals = append(vals, fmt.Sprintf("%v=%v", x.Metric, x.Value[1]))
				real = real || x.float() > 0 // NaN is not; nor is an increase the trips never made
			}
			if !real {
				t.Errorf("panel %q: %s shows nothing of the trips: %v", panel.Title, expr, vals)
				continue
			}
			t.Logf("panel %q: %s -> %s", panel.Title, expr, strings.Join(vals, ", "))
		}
	}
}
