//go:build !turnwatch_nodrill

package main

import (
	"io"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/gateway"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// The gateway's scripted mode: the scripted model served in process, one
// server (a drill's upstream).
func init() {
	scriptedUpstream = func(scenario, logPath string) (http.RoundTripper, io.Closer, error) {
		sc, err := scriptedmodel.Lookup(scenario)
		if err != nil {
			return nil, nil, err
		}
		srv, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, LogPath: logPath})
		if err != nil {
			return nil, nil, err
		}
		return gateway.InProcess(srv), srv, nil
	}
}
