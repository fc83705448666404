package modelapi

import (
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// The bounds an agent that may be hostile meets (docs/security.md) where
// turnwatch serves it a model API, the scripted model's and the gateway's
// alike: a bounded number of connections, a request's header read in
// bounded time and size. Bodies and answers are streamed and have no
// deadline here: a model may think for minutes.
const (
	// MaxConns bounds the connections open at once; more wait in the
	// kernel's backlog until one closes.
	MaxConns = 64
	// headerTimeout bounds the read of a request's header; idleTimeout how
	// long a kept-alive connection may wait for its next request.
	headerTimeout = 10 * time.Second
	idleTimeout   = time.Minute
	maxHeader     = 64 << 10
)

// Serve serves h on ln within the bounds until the returned server is
// closed or shut down; done gets what http.Server.Serve returned (nil once
// closed).
func Serve(h http.Handler, ln net.Listener) (hs *http.Server, done <-chan error) {
	hs = &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeader}
	ch := make(chan error, 1)
	go func() {
		err := hs.Serve(netutil.LimitListener(ln, MaxConns))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		ch <- err
	}()
	return hs, ch
}
