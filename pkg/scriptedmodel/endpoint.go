package scriptedmodel

import "turnwatch.dev/turnwatch/pkg/agents"

// Endpoint is where a CLI reads its model endpoint and key (agents.Endpoint).
type Endpoint = agents.Endpoint

// Endpoints holds each format's Endpoint, from the CLIs' table (agents.CLIs).
var Endpoints = func() map[string]Endpoint {
	m := make(map[string]Endpoint, len(agents.CLIs))
	for _, c := range agents.CLIs {
		m[c.Format] = c.Endpoint
	}
	return m
}()
