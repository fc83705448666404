package scriptedmodel

import (
	"net"
	"net/http"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// The bounds an agent that may be hostile meets (docs/security.md): the
// drill's agent talks to the model and may try to use it as anything
// else. The model reads a bounded body (Options.MaxBody) in bounded time
// (bodyTimeout), serves a bounded number of requests at once
// (Options.MaxRequests), keeps a bounded number of connections open
// (modelapi.MaxConns), and refuses to act as a proxy (proxied).

// Serve serves s on ln with those bounds (modelapi.Serve), until the
// returned server is closed or shut down; done gets what http.Server.Serve
// returned (nil once closed).
func (s *Server) Serve(ln net.Listener) (hs *http.Server, done <-chan error) {
	return modelapi.Serve(s, ln)
}
