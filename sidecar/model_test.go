//go:build !turnwatch_nodrill

package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestModelValidate(t *testing.T) {
	tests := []struct {
		model Model
		want  string // "" valid, else a part of the error
	}{
		{Model{}, ""},
		{Model{Scenario: "identicalLoop", Port: 4000}, ""},
		{Model{Scenario: "identicalLoop", Port: 65535}, ""},
		{Model{Upstream: "https://api.example.invalid", KeyFile: "/k", Token: "t", Port: 4000}, ""},
		{Model{Scenario: "identicalLoop"}, protocol.EnvModelPort},
		{Model{Scenario: "identicalLoop", Port: 70000}, protocol.EnvModelPort},
		{Model{Port: 4000}, protocol.EnvDrillScenario},
		{Model{Scenario: "nope", Port: 4000}, protocol.EnvDrillScenario + `: unknown scenario "nope"`},
		{Model{Scenario: "healthy", Upstream: "https://a.invalid", Port: 4000}, "both set"},
		{Model{Upstream: "ftp://a.invalid", Port: 4000}, protocol.EnvModelUpstream},
		{Model{Upstream: "https://", Port: 4000}, protocol.EnvModelUpstream},
		{Model{Scenario: "healthy", KeyFile: "/k", Port: 4000}, protocol.EnvModelKeyFile},
	}
	for _, tt := range tests {
		o := Options{Format: monitor.FormatClaude, Guards: monitor.DefaultGuards(), PodName: "p", Namespace: "ns", AgentContainer: "a", Model: tt.model}
		err := o.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.model, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: got %v, want an error naming %q", tt.model, err, tt.want)
		}
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// askModel sends the model one request of the main conversation (with
// tools) or a side one, as the agent would.
func askModel(t *testing.T, port int, main bool) (status int, answer string) {
	t.Helper()
	req := `{"model":"m","stream":true,"messages":[{"role":"user","content":"do it"}]`
	if main {
		req += `,"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	}
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/v1/messages", "application/json", strings.NewReader(req+"}"))
	if err != nil {
		t.Errorf("the model: %v", err)
		return 0, ""
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func drillReport(t *testing.T, c map[string]corev1.PodCondition) protocol.DrillReport {
	t.Helper()
	var r protocol.DrillReport
	d, ok := c[protocol.ConditionDrill]
	if !ok {
		return r
	}
	if d.Status != corev1.ConditionTrue || d.Reason != protocol.ReasonDrillServed {
		t.Errorf("Drill condition %s/%s", d.Status, d.Reason)
	}
	if err := json.Unmarshal([]byte(d.Message), &r); err != nil {
		t.Errorf("Drill message %q: %v", d.Message, err)
	}
	return r
}

// A drill turn's sidecar serves the model before it reads the agent's
// first line and writes the report with the trip (in the same patch).
// After the trip the gateway refuses the agent's next request, in the
// API's shape and with the CLI's refusal status, and the scripted model
// never sees it.
func TestDrillServesAndReports(t *testing.T) {
	port := freePort(t)
	p := &syncPatcher{p: &podPatcher{t: t}}
	first := true
	src := &scriptedSource{lines: loopTurn(6), before: func() {
		if first { // the agent asks the model before it prints anything
			first = false
			askModel(t, port, true)
			askModel(t, port, false)
		}
	}}
	r := testRunner(t, src, p, clock.RealClock{})
	r.cfg.Model = Model{Scenario: "identicalLoop", Port: port}
	r.cfg.Drain = 300 * time.Millisecond
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "the trip", has(protocol.ConditionTripped))
	c, _ := p.conditions()
	if got := drillReport(t, c); got != (protocol.DrillReport{Scenario: "identicalLoop", Requests: 1, SideRequests: 1, Fresh: true}) {
		t.Errorf("report with the trip: %+v", got)
	}
	// The report went out with the trip's patch, or before it (a tick).
	p.mu.Lock()
	told := false
	for _, b := range p.p.bodies {
		told = told || strings.Contains(b, protocol.ConditionDrill)
		if strings.Contains(b, protocol.ConditionTripped) && !told {
			t.Errorf("the trip went out before the drill's report: %s", b)
		}
	}
	p.mu.Unlock()
	term()
	status, body := askModel(t, port, true) // during the drain: the gateway still answers
	claude, _ := agents.Lookup(monitor.FormatClaude)
	if status != claude.Refusal || !strings.Contains(body, "turnwatch") || !strings.Contains(body, "identicalCalls") || !strings.Contains(body, `"type":"error"`) {
		t.Errorf("after the trip: HTTP %d %s", status, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, _ = p.conditions()
	if got := drillReport(t, c); got.Requests != 1 {
		t.Errorf("report after the drain: %+v (the refused request reached the model)", got)
	}
	if _, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Error("the model still listens after the sidecar ended")
	}
}

// A port another process holds ends the sidecar loudly: the Failed
// condition and the termination message name the port.
func TestDrillPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	p := &syncPatcher{p: &podPatcher{t: t}}
	r := testRunner(t, &scriptedSource{lines: healthyTurn()}, p, clock.RealClock{})
	r.cfg.Model = Model{Scenario: "healthy", Port: port}
	r.cfg.TerminationLog = filepath.Join(t.TempDir(), "termination-log")
	err = r.run(context.Background())
	var f *failure
	if !errors.As(err, &f) || f.reason != protocol.ReasonDrillPortTaken {
		t.Fatalf("run: %v", err)
	}
	c, _ := p.conditions()
	failed := c[protocol.ConditionFailed]
	if failed.Reason != protocol.ReasonDrillPortTaken || !strings.Contains(failed.Message, strconv.Itoa(port)) {
		t.Errorf("Failed = %s/%s", failed.Reason, failed.Message)
	}
	b, _ := os.ReadFile(r.cfg.TerminationLog)
	if reason, msg, ok := protocol.SidecarFailure(string(b)); !ok || reason != protocol.ReasonDrillPortTaken || !strings.Contains(msg, "address already in use") {
		t.Errorf("termination message %q", b)
	}
	if _, ok := c[protocol.ConditionFinished]; ok {
		t.Error("the sidecar watched the agent without its model")
	}
}

// A restarted sidecar's model counts from zero: its report goes on from
// the one on the Pod, and keeps the first run's fresh.
func TestDrillSince(t *testing.T) {
	tests := []struct {
		name              string
		before, now, want protocol.DrillReport
	}{
		{"first run", protocol.DrillReport{}, protocol.DrillReport{Scenario: "cycle", Requests: 3, Fresh: true},
			protocol.DrillReport{Scenario: "cycle", Requests: 3, Fresh: true}},
		{"restarted", protocol.DrillReport{Scenario: "cycle", Requests: 5, SideRequests: 1, Fresh: true},
			protocol.DrillReport{Scenario: "cycle", Requests: 2, Fresh: false},
			protocol.DrillReport{Scenario: "cycle", Requests: 7, SideRequests: 1, Fresh: true}},
		{"restarted after side requests only", protocol.DrillReport{Scenario: "cycle", SideRequests: 2},
			protocol.DrillReport{Scenario: "cycle", Requests: 1, Fresh: true},
			protocol.DrillReport{Scenario: "cycle", Requests: 1, SideRequests: 2, Fresh: true}},
	}
	for _, tt := range tests {
		if got := drillSince(tt.before, tt.now); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// The sidecar hands the model the run's guards: with identicalCalls
// raised to 10, identicalLoop still calls at step 11 (past 10 + 2 = 12 it
// answers).
func TestDrillPlaysPastTheRunsGuards(t *testing.T) {
	g := monitor.DefaultGuards()
	g.IdenticalCalls = 10
	m, h, err := scriptedUpstream("identicalLoop", g)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tt := range []struct {
		step     int
		wantCall bool
	}{{0, true}, {11, true}, {12, false}} {
		msgs := `{"role":"user","content":"do it"}`
		for i := range tt.step {
			msgs += fmt.Sprintf(`,{"role":"assistant","content":[{"type":"tool_use","id":"c%d","name":"Bash","input":{"command":"cat /etc/os-release"}}]}`, i) +
				fmt.Sprintf(`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"c%d","content":"NAME=Debian"}]}`, i)
		}
		body := `{"model":"m","messages":[` + msgs + `],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if called := strings.Contains(string(b), `"tool_use"`); called != tt.wantCall {
			t.Errorf("step %d: called %v, want %v: %s", tt.step, called, tt.wantCall, b)
		}
	}
	if rep := m.Report(); rep.Requests != 3 || rep.Fresh != true || rep.Scenario != "identicalLoop" {
		t.Errorf("report %+v", rep)
	}
}

// A turn behind the gateway costs what the model's answers say, priced by
// the run's table: the stream's own figure (its messages' tokens, then a
// forged total_cost_usd of 0) is kept beside it and changes nothing.
func TestGatewayMetersTheAnswers(t *testing.T) {
	port := freePort(t)
	p := &syncPatcher{p: &podPatcher{t: t}}
	asked := false
	lines := healthyTurn()
	lines[len(lines)-1] = `{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0}`
	src := &scriptedSource{lines: lines, before: func() {
		if !asked { // the agent asks the model before it prints anything
			asked = true
			askModel(t, port, true)
		}
	}}
	r := testRunner(t, src, p, clock.RealClock{})
	prices, err := monitor.ParsePrices([]byte(`{"readAt":"2027-01-01","models":{"m":{"input":"1000","output":"10000"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Prices = prices
	r.cfg.Model = Model{Scenario: "healthy", Port: port}
	r.cfg.Drain = 100 * time.Millisecond
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "the summary", has(protocol.ConditionFinished))
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, _ := p.conditions()
	var s protocol.Summary
	if err := json.Unmarshal([]byte(c[protocol.ConditionFinished].Message), &s); err != nil {
		t.Fatalf("summary %q: %v", c[protocol.ConditionFinished].Message, err)
	}
	// The scripted model's first answer: 1000 input and 50 output tokens
	// (pkg/scriptedmodel's answer), at 1000 and 10000 USD per million.
	if got, want := s.CostUSD(), "1.50"; got != want {
		t.Errorf("metered cost %s, want %s", got, want)
	}
	if s.StreamCost == s.Cost {
		t.Errorf("stream cost %s: the stream's own figure was not kept beside the metered one", s.StreamCost)
	}
}

// An answer still in flight when the agent's output ended (a CLI's title
// request) counts in the summary: the sidecar waits for it, up to
// modelSettle.
func TestGatewayWaitsForAnswersInFlight(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		time.Sleep(300 * time.Millisecond) // past the output's end
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":50}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer upstream.Close()
	port := freePort(t)
	p := &syncPatcher{p: &podPatcher{t: t}}
	lines := healthyTurn()
	asked := false
	src := &scriptedSource{lines: lines, before: func() {
		if !asked { // a request the agent leaves in flight
			asked = true
			go askModel(t, port, false)
			time.Sleep(100 * time.Millisecond)
			close(release)
		}
	}}
	r := testRunner(t, src, p, clock.RealClock{})
	prices, err := monitor.ParsePrices([]byte(`{"readAt":"2027-01-01","models":{"m":{"input":"1000","output":"10000"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Prices = prices
	r.cfg.Model = Model{Upstream: upstream.URL, Port: port}
	r.cfg.Drain = 100 * time.Millisecond
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	p.waitFor(t, "the summary", has(protocol.ConditionFinished))
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, _ := p.conditions()
	var s protocol.Summary
	if err := json.Unmarshal([]byte(c[protocol.ConditionFinished].Message), &s); err != nil {
		t.Fatal(err)
	}
	// 1000 input and 50 output tokens at 1000 and 10000 USD per million.
	if got, want := s.CostUSD(), "1.50"; got != want {
		t.Errorf("metered cost %s, want %s: the answer that ended after the output was not counted", got, want)
	}
}

// A sidecar restarted after the turn tripped keeps refusing: the trip on
// the Pod still ends the turn, and the model never sees the request.
func TestGatewayRefusesAfterARestart(t *testing.T) {
	port := freePort(t)
	p := &syncPatcher{p: &podPatcher{t: t}}
	p.p.pod.Status.Conditions = []corev1.PodCondition{{Type: protocol.ConditionTripped, Status: corev1.ConditionTrue,
		Reason: "IdenticalCalls", Message: "repeated an identical tool call 4 times"}}
	r := testRunner(t, &scriptedSource{lines: healthyTurn()}, p, clock.RealClock{})
	r.cfg.Model = Model{Scenario: "healthy", Port: port}
	r.cfg.Drain = 100 * time.Millisecond
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.run(ctx) }()
	var status int
	var body string
	for range 100 { // until the gateway listens
		if _, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			status, body = askModel(t, port, true)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	term()
	<-done
	claude, _ := agents.Lookup(monitor.FormatClaude)
	if status != claude.Refusal || !strings.Contains(body, "identicalCalls") {
		t.Errorf("after a restart past the trip: HTTP %d %s", status, body)
	}
	if r.model.drill.Report().Requests != 0 {
		t.Error("the refused request reached the model")
	}
}
