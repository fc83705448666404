package gateway

import (
	"net"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// Serve serves g on ln with the bounds an agent that may be hostile meets
// (modelapi.Serve: connections, a header's time and size), until the
// returned server is closed or shut down; done gets what http.Server.Serve
// returned (nil once closed).
func (g *Gateway) Serve(ln net.Listener) (hs *http.Server, done <-chan error) {
	return modelapi.Serve(g, ln)
}
