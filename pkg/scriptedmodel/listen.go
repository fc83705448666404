package scriptedmodel

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// The bounds an agent that may be hostile meets (docs/security.md): the
// drill's agent talks to the model and may try to use it as anything
// else. The model reads a bounded body (Options.MaxBody) in bounded time
// (bodyTimeout), serves a bounded number of requests at once
// (Options.MaxRequests), keeps a bounded number of connections open
// (MaxConns), and refuses to act as a proxy (proxied).
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

// Serve serves s on ln, at most MaxConns connections at once, until the
// returned server is closed or shut down; done gets what http.Server.Serve
// returned (nil once closed).
func (s *Server) Serve(ln net.Listener) (hs *http.Server, done <-chan error) {
	hs = &http.Server{Handler: s, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeader}
	ch := make(chan error, 1)
	go func() {
		err := hs.Serve(&limitedListener{Listener: ln, slots: make(chan struct{}, MaxConns)})
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		ch <- err
	}()
	return hs, ch
}

// limitedListener accepts a connection only while fewer than its slots
// are open.
type limitedListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// limitedConn gives its slot back once, when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
