package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/gateway"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Model is the model API the sidecar serves on the Pod's loopback, as
// the controller set it (docs/gateway.md): the gateway in front of an
// upstream, a real provider's (Upstream, KeyFile) or, on a drill turn, the
// scripted model playing Scenario (docs/drill.md). One server, one wiring.
// The zero value serves nothing.
type Model struct {
	// Port is the loopback port (protocol.EnvModelPort).
	Port int
	// Scenario is a drill's (protocol.EnvDrillScenario).
	Scenario string
	// Upstream is the provider's base URL (protocol.EnvModelUpstream) and
	// KeyFile the file holding its key (protocol.EnvModelKeyFile).
	Upstream string
	KeyFile  string
	// Token is the placeholder key the agent holds (protocol.EnvModelToken).
	Token string
	// Hold holds a refused model request open instead of answering it
	// (protocol.EnvModelHold, gateway.Refusal.Hold).
	Hold bool
}

// on says whether the sidecar serves a model.
func (m Model) on() bool { return m.Port != 0 || m.Scenario != "" || m.Upstream != "" }

// validate says what is wrong with m, naming the env var that set it.
func (m Model) validate() error {
	switch {
	case !m.on():
		return nil
	case m.Scenario == "" && m.Upstream == "":
		return fmt.Errorf("%s is set without %s or %s", protocol.EnvModelPort, protocol.EnvDrillScenario, protocol.EnvModelUpstream)
	case m.Scenario != "" && m.Upstream != "":
		return fmt.Errorf("%s and %s are both set: a drill's upstream is its scripted model", protocol.EnvDrillScenario, protocol.EnvModelUpstream)
	case m.Port < 1 || m.Port > 65535:
		return fmt.Errorf("%s %d: want a port 1-65535", protocol.EnvModelPort, m.Port)
	case m.KeyFile != "" && m.Upstream == "":
		return fmt.Errorf("%s is set without %s", protocol.EnvModelKeyFile, protocol.EnvModelUpstream)
	}
	if m.Upstream != "" {
		if u, err := url.Parse(m.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s %q: want an http or https URL", protocol.EnvModelUpstream, m.Upstream)
		}
		return nil
	}
	if err := lookupScenario(m.Scenario); err != nil {
		return fmt.Errorf("%s: %w", protocol.EnvDrillScenario, err)
	}
	return nil
}

// drillModel is the scripted model a drill's gateway forwards to
// (drill_serve.go), as the runner sees it: what it served so far.
type drillModel interface {
	Report() protocol.DrillReport
}

// servedModel is the gateway the sidecar serves, and what it tells the
// runner: the model's side (events) and, on a drill, the scripted model.
type servedModel struct {
	gw    *gateway.Gateway
	hs    *http.Server
	drill drillModel // nil unless a drill
	// refusal, once set (a stopping trip), refuses every model request.
	refusal atomic.Pointer[gateway.Refusal]
	// events carry the model's side to the watch (watchModel); deltas that
	// find it full are dropped and counted, a message's end waits.
	events  chan monitor.ModelEvent
	done    chan struct{} // closed when nothing reads events any more
	closing sync.Once
	dropped atomic.Int64
}

// modelEvents bounds what the model's side may run ahead of the watch.
const modelEvents = 1024

func (m *servedModel) gate() *gateway.Refusal { return m.refusal.Load() }

// observe hands one model event to the watch. The gateway calls it on the
// request's goroutine, so it must not wait on the engine: a delta is
// dropped (and counted) when the watch is behind, a message's end is not.
func (m *servedModel) observe(ev monitor.ModelEvent) {
	if !ev.End {
		ev.Delta = bytes.Clone(ev.Delta)
		select {
		case m.events <- ev:
		case <-m.done:
		default:
			m.dropped.Add(1)
		}
		return
	}
	select {
	case m.events <- ev:
	case <-m.done:
	}
}

// startModel serves the model for the sidecar's whole life, before it
// watches the agent: the agent starts only after the sidecar's
// startupProbe (turnwatch-sidecar probe) reached the port. A port that
// cannot be bound is a failure retrying cannot fix (another Pod of the
// node's host network holds it), told on the Pod as DrillPortTaken; so is
// a key that cannot be read.
func (r *runner) startModel() error {
	m := r.cfg.Model
	if !m.on() {
		return nil
	}
	sm := &servedModel{events: make(chan monitor.ModelEvent, modelEvents), done: make(chan struct{})}
	opts, err := r.gatewayOptions(sm)
	if err != nil {
		return &failure{protocol.ReasonDrillPortTaken, err}
	}
	if sm.gw, err = gateway.New(opts); err != nil {
		return &failure{protocol.ReasonDrillPortTaken, err}
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port)))
	if err != nil {
		return &failure{protocol.ReasonDrillPortTaken, fmt.Errorf("the model gateway cannot listen on port %d: %w", m.Port, err)}
	}
	sm.hs, _ = sm.gw.Serve(ln) // the bounds a hostile agent meets
	r.model = sm
	r.log.Info("serving the model gateway", "port", m.Port, "scenario", m.Scenario, "upstream", m.Upstream)
	return nil
}

// gatewayOptions are the gateway's: the upstream (a drill's scripted
// model, in this process), the key, and what the CLI's row says.
func (r *runner) gatewayOptions(sm *servedModel) (gateway.Options, error) {
	m := r.cfg.Model
	cli, _ := agents.Lookup(r.cfg.Format) // auto: the defaults
	opts := gateway.Options{Token: m.Token, Refusal: cli.Refusal, Gate: sm.gate, Observe: sm.observe,
		Deltas: cli.ModelSide().Deltas, Log: r.log.WithName("gateway")}
	if m.Scenario != "" {
		d, h, err := scriptedUpstream(m.Scenario, r.cfg.Guards)
		if err != nil {
			return opts, err
		}
		sm.drill = d
		opts.Upstream, opts.Transport = &url.URL{Scheme: "http", Host: "scripted.invalid"}, gateway.InProcess(h)
		return opts, nil
	}
	u, err := url.Parse(m.Upstream) // validated
	if err != nil {
		return opts, err
	}
	opts.Upstream = u
	if m.KeyFile != "" {
		b, err := os.ReadFile(m.KeyFile)
		if err != nil {
			return opts, fmt.Errorf("the model gateway cannot read its key: %w", err) // the path, never the key
		}
		opts.Key = strings.TrimSpace(string(b))
	}
	return opts, nil
}

// isDrill says whether the sidecar serves a drill's scripted model.
func (r *runner) isDrill() bool { return r.model != nil && r.model.drill != nil }

// modelRead says nothing reads the model's events any more: the gateway
// stops waiting to hand them over.
func (r *runner) modelRead() {
	if r.model != nil {
		r.model.closing.Do(func() { close(r.model.done) })
	}
}

// refuse makes the gateway refuse every model request from now on: the
// turn tripped, and the agent must end at its next request.
func (r *runner) refuse(t *monitor.Trip) {
	if r.model == nil {
		return
	}
	r.model.refusal.CompareAndSwap(nil, &gateway.Refusal{Reason: t.Detector, Message: t.Message, Hold: r.cfg.Model.Hold})
}

// refuseIfTripped keeps refusing after a restart: a trip an earlier run of
// this sidecar told on the Pod (read by load) still ends the turn.
func (r *runner) refuseIfTripped() {
	if c, ok := r.rep.present[protocol.ConditionTripped]; ok && c.Status == corev1.ConditionTrue {
		r.refuse(&monitor.Trip{Detector: protocol.DetectorFor(c.Reason), Message: c.Message})
	}
}

// reportDrill makes the reporter tell what the model served, counted on
// from what an earlier run of this sidecar told on the Pod (read by load).
func (r *runner) reportDrill() {
	if r.model == nil || r.model.drill == nil {
		return
	}
	d := r.model.drill
	var before protocol.DrillReport
	if c, ok := r.rep.present[protocol.ConditionDrill]; ok {
		_ = json.Unmarshal([]byte(c.Message), &before) // unreadable: count from zero
	}
	r.rep.drill = func() protocol.DrillReport { return drillSince(before, d.Report()) }
}

// drillSince joins what an earlier run of the sidecar reported with what
// this one's model served: a restarted sidecar's model counts from zero,
// and its first request may well continue the conversation (not fresh).
func drillSince(before, now protocol.DrillReport) protocol.DrillReport {
	out := now
	out.Requests += before.Requests
	out.SideRequests += before.SideRequests
	if before.Requests > 0 {
		out.Fresh = before.Fresh
	}
	return out
}

// stopModel ends the gateway, last of all, and logs what it served.
func (r *runner) stopModel() {
	if r.model == nil {
		return
	}
	c := r.model.gw.Counts()
	r.log.Info("the model gateway served", "forwarded", c.Forwarded, "refused", c.Refused, "unmetered", c.Unmetered,
		"deltasDropped", r.model.dropped.Load())
	if d := r.model.drill; d != nil {
		rep := d.Report()
		r.log.Info("the drill's scripted model served", "scenario", rep.Scenario, "requests", rep.Requests, "sideRequests", rep.SideRequests, "fresh", rep.Fresh)
	}
	r.modelRead()
	_ = r.model.hs.Close()
}

// drillCondition is the drill's report as its Pod condition; false when
// the turn is no drill.
func (r *reporter) drillCondition() (desired, bool) {
	if r.drill == nil {
		return desired{}, false
	}
	return protocol.DrillCondition(r.drill()), true
}

// withDrill adds the drill's report to a verdict's conditions: the
// controller settles the turn with the report it read in the same write.
func (r *reporter) withDrill(conds []desired) []desired {
	if c, ok := r.drillCondition(); ok {
		conds = append(conds, c)
	}
	return conds
}

// drillServed writes the drill's report once the model served something
// and the report changed, at most once per period.
func (r *reporter) drillServed(ctx context.Context) {
	c, ok := r.drillCondition()
	if !ok || r.has(c) || r.clock.Now().Sub(r.lastDrill) < r.period {
		return
	}
	if rep := r.drill(); rep.Requests+rep.SideRequests == 0 {
		return
	}
	body, n := r.body([]desired{c})
	if n == 0 {
		return
	}
	r.lastDrill = r.clock.Now()
	if err := r.write(ctx, body); err != nil {
		r.log.Info("writing the drill's report failed", "err", err.Error())
	}
}

// drillFinal writes the drill's report if it changed since the last write,
// whatever the period: the last word, after the drain.
func (r *reporter) drillFinal(ctx context.Context) error {
	c, ok := r.drillCondition()
	if !ok {
		return nil
	}
	return r.ensure(ctx, c)
}
