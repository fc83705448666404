package gateway

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// InProcess is a RoundTripper that serves each request with h in this
// process, the response streamed through a pipe as h writes it: a drill's
// upstream is the scripted model, one server, no socket.
func InProcess(h http.Handler) http.RoundTripper { return inProcess{h} }

type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	in := serverRequest(req.WithContext(ctx))
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer in.Body.Close() // a RoundTripper closes the request's body
		defer func() {
			if p := recover(); p != nil {
				pw.CloseWithError(io.ErrUnexpectedEOF)
			}
		}()
		t.h.ServeHTTP(rw, in)
		rw.WriteHeader(http.StatusOK) // a handler that wrote nothing
		pw.Close()
	}()
	select {
	case <-rw.ready:
	case <-ctx.Done():
		cancel()
		pr.Close()
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: http.StatusText(rw.status), StatusCode: rw.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: &pipeBody{pr, cancel}, ContentLength: -1, Request: req,
	}, nil
}

// serverRequest is req as a server would have read it: a path, not an
// absolute URL (a handler refuses those as proxy requests).
func serverRequest(req *http.Request) *http.Request {
	in := req.Clone(req.Context())
	in.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	in.Host = req.URL.Host
	in.RemoteAddr = "127.0.0.1:0"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	return in
}

// pipeWriter is the handler's ResponseWriter: the header is sent at the
// first write, the body goes through the pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	status int
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: the pipe holds nothing back.
func (w *pipeWriter) Flush() {}

// pipeBody is the response body: closing it ends the handler's request.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}
