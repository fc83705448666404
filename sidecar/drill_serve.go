//go:build !turnwatch_nodrill

package sidecar

import (
	"encoding/json"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// The drill's model lives in this file alone, so that a sidecar built with
// the tag turnwatch_nodrill links no scripted model (drill_off.go): the
// footprint docs/performance.md measures both ways.

// drillLog bounds the model's request log, kept in memory only: the
// sidecar reads only the counts of its report.
const drillLog = 8

// lookupScenario says whether the model knows the scenario.
func lookupScenario(name string) error {
	_, err := scriptedmodel.Lookup(name)
	return err
}

// scriptedModel is the drill's scripted model, the gateway's upstream.
type scriptedModel struct {
	scenario string
	srv      *scriptedmodel.Server
}

// Report is what the model served so far.
func (m scriptedModel) Report() protocol.DrillReport {
	main, side, fresh := m.srv.Served()
	return protocol.DrillReport{Scenario: m.scenario, Requests: main, SideRequests: side, Fresh: fresh}
}

// scriptedUpstream is the scripted model playing the scenario sized to the
// run's guards: the drill's gateway forwards to it in this process, so
// nothing but the gateway listens (docs/drill.md).
func scriptedUpstream(scenario string, g monitor.Guards) (drillModel, http.Handler, error) {
	sc, err := scriptedmodel.Lookup(scenario)
	if err != nil {
		return nil, nil, err
	}
	guards, err := json.Marshal(g) // as TURNWATCH_GUARDS carries them
	if err != nil {
		return nil, nil, err
	}
	srv, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Guards: guards, MaxLog: drillLog})
	if err != nil {
		return nil, nil, err
	}
	return scriptedModel{scenario: sc.Name, srv: srv}, srv, nil
}
