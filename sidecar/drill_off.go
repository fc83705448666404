//go:build turnwatch_nodrill

package sidecar

import (
	"errors"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// A sidecar built with the tag turnwatch_nodrill links no scripted model
// (drill_serve.go), for the footprint measured without it
// (docs/performance.md); it refuses a drill, and serves the gateway.
var errNoDrill = errors.New("this turnwatch-sidecar is built without the drill (tag turnwatch_nodrill)")

func lookupScenario(string) error { return errNoDrill }

func scriptedUpstream(string, monitor.Guards) (drillModel, http.Handler, error) {
	return nil, nil, errNoDrill
}
