package sidecar

import (
	"context"
	"encoding/json"
	"fmt"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Drill is a drill turn's scripted model (docs/drill.md): the scenario it
// plays, sized to the run's guards, and the loopback port it listens on,
// as the controller set them (protocol.EnvDrillScenario,
// protocol.EnvModelPort). The zero value is no drill.
type Drill struct {
	Scenario string
	Port     int
}

// on says whether the turn is a drill.
func (d Drill) on() bool { return d.Scenario != "" || d.Port != 0 }

// validate says what is wrong with d, naming the env var that set it.
func (d Drill) validate() error {
	switch {
	case !d.on():
		return nil
	case d.Scenario == "":
		return fmt.Errorf("%s is set without %s", protocol.EnvModelPort, protocol.EnvDrillScenario)
	case d.Port < 1 || d.Port > 65535:
		return fmt.Errorf("%s %d: want a port 1-65535", protocol.EnvModelPort, d.Port)
	}
	if err := lookupScenario(d.Scenario); err != nil {
		return fmt.Errorf("%s: %w", protocol.EnvDrillScenario, err)
	}
	return nil
}

// drillModel is the scripted model the sidecar serves (drill_serve.go),
// as the runner sees it: what it served so far, and its end.
type drillModel interface {
	Report() protocol.DrillReport
	Close() error
}

// startDrill serves the drill's model for the sidecar's whole life, before
// it watches the agent: the agent starts only after the sidecar's
// startupProbe (turnwatch-sidecar probe) reached the port. A port that
// cannot be bound is a failure retrying cannot fix (another Pod of the
// node's host network holds it), told on the Pod as DrillPortTaken.
func (r *runner) startDrill() error {
	if !r.cfg.Drill.on() {
		return nil
	}
	m, err := serveDrill(r.cfg.Drill, r.cfg.Guards)
	if err != nil {
		return &failure{protocol.ReasonDrillPortTaken, err}
	}
	r.drill = m
	r.log.Info("serving the drill's scripted model", "scenario", r.cfg.Drill.Scenario, "port", r.cfg.Drill.Port)
	return nil
}

// reportDrill makes the reporter tell what the model served, counted on
// from what an earlier run of this sidecar told on the Pod (read by load).
func (r *runner) reportDrill() {
	if r.drill == nil {
		return
	}
	var before protocol.DrillReport
	if c, ok := r.rep.present[protocol.ConditionDrill]; ok {
		_ = json.Unmarshal([]byte(c.Message), &before) // unreadable: count from zero
	}
	r.rep.drill = func() protocol.DrillReport { return drillSince(before, r.drill.Report()) }
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

// stopDrill ends the model, last of all, and logs what it served.
func (r *runner) stopDrill() {
	if r.drill == nil {
		return
	}
	rep := r.drill.Report()
	r.log.Info("the drill's scripted model served", "scenario", rep.Scenario, "requests", rep.Requests, "sideRequests", rep.SideRequests, "fresh", rep.Fresh)
	_ = r.drill.Close()
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
