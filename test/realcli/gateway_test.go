//go:build realcli

package realcli

import (
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/gateway"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// realKey is the upstream's key, as the gateway holds it from a Secret.
// The CLIs hold only placeholder, the key every CLI of clis is given.
const (
	realKey     = "sk-realcli-upstream-4f1c9e27b8d05a63"
	placeholder = "scripted"
)

// metered is one CLI's run through the model gateway (pkg/gateway, in
// this process) to the scripted model on the loopback, its upstream: what
// the gateway metered (Observe), the keys the upstream got, and a budget
// that the gateway's Gate refuses past.
type metered struct {
	gw     *gateway.Gateway
	model  *scriptedmodel.Server
	prices monitor.Prices
	mu     sync.Mutex
	ends   []monitor.ModelEvent // each message end Observe got
	cost   monitor.Money        // their usage at the prices
	keys   []string             // the key of each request the upstream got
	// budget, when set, is spent once cost passes it: the gateway refuses
	// every model request after (Reason "budget").
	budget    monitor.Money
	refusedAt time.Time // when Gate first refused
}

func newMetered(t *testing.T, c cli, sc scriptedmodel.Scenario, budget monitor.Money) *metered {
	t.Helper()
	m, upstream := newUpstream(t, sc)
	m.budget = budget
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := agents.Lookup(c.format)
	m.gw, err = gateway.New(gateway.Options{Upstream: u, Key: realKey, Token: placeholder, Refusal: row.Refusal,
		Gate: m.gate, Observe: m.observe})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newUpstream serves sc's scripted model on the loopback, noting the keys
// it gets: a gateway's upstream. It returns the upstream's URL.
func newUpstream(t *testing.T, sc scriptedmodel.Scenario) (*metered, string) {
	t.Helper()
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	m := &metered{model: model, prices: monitor.DefaultPrices()}
	upstream, stop, err := serveLoopback(http.HandlerFunc(m.upstream))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return m, upstream
}

// upstream is the scripted model, noting the key each request carries in
// any of the APIs' key headers.
func (m *metered) upstream(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("x-api-key") + r.Header.Get("x-goog-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	m.mu.Lock()
	m.keys = append(m.keys, key)
	m.mu.Unlock()
	m.model.ServeHTTP(w, r)
}

func (m *metered) observe(ev monitor.ModelEvent) {
	if !ev.End {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ends = append(m.ends, ev)
	m.cost = m.cost.Add(m.prices.Price(ev.Model, ev.Usage))
}

func (m *metered) gate() *gateway.Refusal {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget == 0 || m.cost <= m.budget {
		return nil
	}
	if m.refusedAt.IsZero() {
		m.refusedAt = time.Now()
	}
	return &gateway.Refusal{Reason: "budget", Message: "the turn's budget of $" + m.budget.String() + " is spent"}
}

// served is what the upstream's answers reported as used, at the prices:
// what the metered cost must equal.
func (m *metered) served() monitor.Money {
	var sum monitor.Money
	for _, q := range m.model.Requests() {
		sum = sum.Add(m.prices.Price(q.Model, monitor.Usage{Input: int64(q.Input), Output: int64(q.Output)}))
	}
	return sum
}

// run runs c through the gateway.
func (m *metered) run(t *testing.T, c cli, scenario string) outcome {
	return runOn(t, c.name, c.format, cliLaunch(c), "gateway-"+scenario, m.gw, map[string]any{}, t.TempDir())
}

// checkKeys: every request reached the upstream with the real key, and
// the CLI, which held the placeholder (the gateway refuses any other key),
// never printed the real one.
func (m *metered) checkKeys(t *testing.T, o outcome) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) == 0 {
		t.Errorf("the upstream got no request")
	}
	for i, k := range m.keys {
		if k != realKey {
			t.Errorf("upstream request %d carried key %q, want the gateway's", i+1, k)
		}
	}
	if strings.Contains(o.stream, realKey) {
		t.Errorf("the CLI printed the upstream's key")
	}
}

// Through the gateway, each CLI's healthy turn is metered from the
// upstream's answers: the usage of every message end Observe got, at the
// default prices, is exactly what the scripted model served at the same
// prices; the upstream got the real key, the CLI held the placeholder.
func TestGatewayMetered(t *testing.T) {
	healthy, err := scriptedmodel.Lookup("healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			m := newMetered(t, c, healthy, 0)
			o := m.run(t, c, healthy.Name)
			m.checkKeys(t, o)
			m.mu.Lock()
			metered, ends := m.cost, len(m.ends)
			m.mu.Unlock()
			served, requests := m.served(), len(m.model.Requests())
			t.Logf("%s: metered $%s over %d message ends, served $%s over %d requests; the stream said $%s", c.name, metered, ends, served, requests, o.report.CostUSD)
			if metered != served || served == 0 {
				t.Errorf("metered $%s, served $%s: want the same, not 0", metered, served)
			}
			if n := m.gw.Counts(); n.Unmetered != 0 || n.Refused != 0 {
				t.Errorf("gateway counts %+v: want every answer metered, none refused", n)
			}
			if !o.report.Result || o.report.ResultError != "" || o.exit != 0 {
				t.Errorf("result %v %q, exit %d: want a healthy turn", o.report.Result, o.report.ResultError, o.exit)
			}
		})
	}
}

// budgetAfter is the budget of TestGatewayBudget: the price of a little
// more than the first answer of identicalLoop (1000 input and 50 output
// tokens, side requests 10 and 3), so that it is spent by the second.
var budgetAfter = monitor.Usage{Input: 1500, Output: 50}

// refusedText is what every refusal of the gateway says (RefusalMessage).
const refusedText = "turnwatch refused this model request (budget)"

// A budget spent mid-turn: once the metered cost passes it, the gateway
// refuses the next model request (with the CLI's Refusal status, in its
// API's shape); that request never reaches the upstream, the CLI prints
// the refusal and ends by itself within 2 s, and asks nothing more.
// TURNWATCH_REALCLI_RUNS=N runs each CLI N times and logs p50/p99 of
// refusal to exit.
func TestGatewayBudget(t *testing.T) {
	loop, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("TURNWATCH_REALCLI_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			var gone []time.Duration
			for range runs {
				gone = append(gone, checkBudget(t, c, loop))
			}
			logQuantiles(t, c.name+" refusal to exit", gone)
		})
	}
}

func checkBudget(t *testing.T, c cli, loop scriptedmodel.Scenario) time.Duration {
	m := newMetered(t, c, loop, monitor.DefaultPrices().Price(c.model, budgetAfter))
	o := m.run(t, c, loop.Name)
	m.checkKeys(t, o)
	printed := o.report.ResultError
	if printed == "" {
		printed = lastLine(o.stream)
	}
	m.mu.Lock()
	at, cost := m.refusedAt, m.cost
	m.mu.Unlock()
	if at.IsZero() {
		t.Fatalf("the budget $%s was never spent (metered $%s)", m.budget, cost)
	}
	gone := o.exited.Sub(at)
	t.Logf("%s: budget $%s spent at $%s; refused with %d, gone %v after, exit %d, printed %q", c.name, m.budget, cost,
		m.gw.Counts().Refused, gone.Round(time.Millisecond), o.exit, printed)
	var late []string
	for _, q := range m.model.Requests() {
		if !q.Time.Before(at) {
			late = append(late, q.Path+" "+q.Reply)
		}
	}
	switch n := m.gw.Counts(); {
	case n.Refused != 1:
		t.Errorf("the gateway refused %d requests, want exactly 1 (no retry, nothing after)", n.Refused)
	case len(late) > 0 || len(m.model.Main()) != 2:
		t.Errorf("the upstream got %d requests of the main conversation, %v after the refusal: want 2, none after", len(m.model.Main()), late)
	case o.trip != nil:
		t.Errorf("watch stopped the CLI (%s): it did not end by itself", o.trip.Detector)
	case gone > 2*time.Second:
		t.Errorf("the CLI was gone %v after the refusal, want within 2s", gone)
	case !strings.Contains(printed, refusedText):
		t.Errorf("the CLI printed %q, want the gateway's refusal (%q)", printed, refusedText)
	}
	return gone
}

// logQuantiles logs p50, p99 and the max of d.
func logQuantiles(t *testing.T, what string, d []time.Duration) {
	d = slices.Clone(d)
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	t.Logf("%s: p50 %v, p99 %v, max %v over %d runs", what, q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), len(d))
}
