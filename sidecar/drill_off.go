//go:build turnwatch_nodrill

package sidecar

import (
	"errors"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// A sidecar built with the tag turnwatch_nodrill links no scripted model
// (drill_serve.go), for the footprint measured without it
// (docs/performance.md); it refuses a drill.
var errNoDrill = errors.New("this turnwatch-sidecar is built without the drill (tag turnwatch_nodrill)")

func lookupScenario(string) error { return errNoDrill }

func serveDrill(Drill, monitor.Guards) (drillModel, error) { return nil, errNoDrill }
