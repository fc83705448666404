//go:build !turnwatch_nodrill

package sidecar

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

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

// servedModel is the scripted model and its HTTP server.
type servedModel struct {
	scenario string
	srv      *scriptedmodel.Server
	hs       *http.Server
}

func (m servedModel) Close() error { return m.hs.Close() }

// Report is what the model served so far.
func (m servedModel) Report() protocol.DrillReport {
	main, side, fresh := m.srv.Served()
	return protocol.DrillReport{Scenario: m.scenario, Requests: main, SideRequests: side, Fresh: fresh}
}

// serveDrill listens on 127.0.0.1:d.Port, loopback only (the agent shares
// the Pod's network, and nothing else may reach the model), and serves the
// scenario sized to the run's guards.
func serveDrill(d Drill, g monitor.Guards) (drillModel, error) {
	sc, err := scriptedmodel.Lookup(d.Scenario)
	if err != nil {
		return nil, err
	}
	guards, err := json.Marshal(g) // as TURNWATCH_GUARDS carries them
	if err != nil {
		return nil, err
	}
	srv, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Guards: guards, MaxLog: drillLog})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)))
	if err != nil {
		return nil, fmt.Errorf("the drill's scripted model cannot listen on port %d: %w", d.Port, err)
	}
	hs, _ := srv.Serve(ln)
	return servedModel{scenario: sc.Name, srv: srv, hs: hs}, nil
}
