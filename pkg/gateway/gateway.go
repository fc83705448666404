// Package gateway is the model gateway (docs/gateway.md): a reverse proxy on
// the Pod's loopback between the agent and its model. It forwards to one
// upstream only, puts the real key in (the agent holds a placeholder),
// refuses a model request the turn may no longer make (Options.Gate) in the
// API's own error shape, and meters each answer from the provider's own
// usage fields while passing it through unchanged (meter.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"

	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Options configure a Gateway.
type Options struct {
	// Upstream is the base URL: the request's path is joined to its path,
	// the query kept.
	Upstream *url.URL
	// Transport forwards [a clone of http.DefaultTransport]; a drill's is
	// InProcess(the scripted model).
	Transport http.RoundTripper
	// Key is the upstream's key, set in the header the request's API reads
	// (x-api-key, Authorization: Bearer, x-goog-api-key); "" sends none.
	Key string
	// Token is the placeholder key the agent holds; a request carrying
	// another key is refused (401, the API's error shape); "" accepts any.
	Token string
	// Refusal is the status of a refused model request [400]
	// (agents.CLI.Refusal).
	Refusal int
	// Gate is asked before each model request; non-nil: answered by the
	// gateway, never forwarded.
	Gate func() *Refusal
	// Observe gets the model's side: each message end (usage, model, stop)
	// and, when Deltas, each delta; called on the request's goroutine.
	Observe func(monitor.ModelEvent)
	// Deltas asks Observe for each text and thinking delta too.
	Deltas bool
	// Log gets refusals and upstream errors; never a key.
	Log logr.Logger
}

// Refusal is why a model request is refused.
type Refusal struct {
	// Reason is a detector ("identicalCalls") or "budget"/"spend".
	Reason string
	// Message says what tripped or was spent.
	Message string
	// Hold keeps a refused request open, unanswered, until its client
	// goes, instead of answering it: for an agent that the Pod's stop is
	// to end (an attached Pod, docs/attach.md#the-model-gateway), since
	// the CLI an answer ends may exit 0, and its Pod then reads as
	// succeeded. Either way nothing reaches the upstream.
	Hold bool
}

// Counts are what a Gateway did so far.
type Counts struct {
	// Forwarded counts the requests sent upstream.
	Forwarded int64
	// Refused counts the model requests answered by Gate's refusal.
	Refused int64
	// Unmetered counts the model answers whose usage could not be read
	// (garbage, truncated, or no usage sent).
	Unmetered int64
	// InFlight counts the model requests forwarded whose answer has not
	// ended yet (its message end not yet given to Observe).
	InFlight int64
}

// Gateway is an http.Handler serving the model APIs from its upstream.
type Gateway struct {
	o                                       Options
	proxy                                   *httputil.ReverseProxy
	forwarded, refused, unmetered, inFlight atomic.Int64
}

// New makes a Gateway.
func New(o Options) (*Gateway, error) {
	if o.Upstream == nil || o.Upstream.Scheme == "" || o.Upstream.Host == "" {
		return nil, errors.New("gateway: the upstream must be an absolute URL")
	}
	if o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https" {
		return nil, fmt.Errorf("gateway: upstream scheme %q: http or https only", o.Upstream.Scheme)
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Refusal == 0 {
		o.Refusal = http.StatusBadRequest
	}
	g := &Gateway{o: o}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      o.Transport,
		FlushInterval:  -1, // each chunk as it comes
		ModifyResponse: g.meter,
		ErrorHandler:   g.upstreamError,
	}
	return g, nil
}

// Counts returns what the gateway did so far.
func (g *Gateway) Counts() Counts {
	return Counts{Forwarded: g.forwarded.Load(), Refused: g.refused.Load(), Unmetered: g.unmetered.Load(), InFlight: g.inFlight.Load()}
}

// route is what ServeHTTP learned of a request, for the proxy's hooks.
type route struct {
	api   modelapi.API
	known bool // api is set
	model bool // a model request: gated and metered
	// header is where the request carried its credential, for a path no
	// API of the table owns ("" when it carried none).
	header credential
	// scan reads a model request's body as it passes: does it offer tools?
	scan *toolsScan
}

type routeKey struct{}

// ServeHTTP refuses a proxy request, strips the agent's credentials and
// checks them against Token, refuses a model request on an upgraded
// connection or one Gate refuses, and forwards the rest with the key.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if proxied(r) {
		// Only the upstream is served: no host the agent names is dialled.
		http.Error(w, "the turnwatch model gateway is not a proxy: "+r.Method+" refused", http.StatusMethodNotAllowed)
		return
	}
	rt := route{}
	rt.api, rt.known = modelapi.Of(r.URL.Path)
	rt.model = rt.known && rt.api.Model(r.URL.Path) && r.Method == http.MethodPost
	keys, where := takeCredentials(r)
	rt.header = where
	if g.o.Token != "" && !allEqual(keys, g.o.Token) {
		g.o.Log.Info("refused a request carrying another key than the agent's placeholder", "path", r.URL.Path)
		g.answer(w, rt, http.StatusUnauthorized, "the turnwatch model gateway refused this request: its key is not the one the agent was given")
		return
	}
	if rt.known && rt.api.Model(r.URL.Path) && r.Header.Get("Upgrade") != "" {
		// A model request on an upgraded connection (a websocket) would
		// pass ungated and unmetered: the client is to use plain HTTP.
		g.answer(w, rt, http.StatusNotImplemented, "the turnwatch model gateway serves model requests over HTTP, not "+r.Header.Get("Upgrade"))
		return
	}
	if rt.model && g.o.Gate != nil {
		if ref := g.o.Gate(); ref != nil {
			g.refuse(r.Context(), w, rt, ref)
			return
		}
	}
	if rt.model && r.Body != nil {
		rt.scan = &toolsScan{rc: r.Body}
		r.Body = rt.scan
	}
	// The transport reads the request body past its last byte (for its
	// EOF) while the answer may already stream back; an HTTP/1.x server
	// closes a body still open when the answer's headers go out, and the
	// transport, failing that read, closes the upstream's connection in
	// the middle of the answer (TestAnswerOutlivesTheRequestBody). Full
	// duplex keeps the body readable.
	_ = http.NewResponseController(w).EnableFullDuplex()
	g.forwarded.Add(1)
	if rt.model {
		// The proxy returns once the answer's body is closed, and the meter
		// gives its message end at that close (meter.go).
		g.inFlight.Add(1)
		defer g.inFlight.Add(-1)
	}
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
}

// proxied says whether r asks to be proxied elsewhere: a CONNECT, or a
// request line naming a host (an absolute URI).
func proxied(r *http.Request) bool {
	return r.Method == http.MethodConnect || r.URL.IsAbs() || r.URL.Host != ""
}

// refuse answers a model request Gate refused, in the API's shape, or
// holds it until its client goes (Refusal.Hold).
func (g *Gateway) refuse(ctx context.Context, w http.ResponseWriter, rt route, ref *Refusal) {
	g.refused.Add(1)
	g.o.Log.Info("refused a model request", "api", rt.api.Name, "reason", ref.Reason, "message", g.redact(ref.Message), "hold", ref.Hold)
	if ref.Hold {
		<-ctx.Done()
		return
	}
	w.Header().Set("X-Turnwatch-Refused", ref.Reason)
	g.answer(w, rt, g.o.Refusal, RefusalMessage(ref))
}

// RefusalMessage is what a refused request's error says: turnwatch, the
// reason, and where to read more.
func RefusalMessage(ref *Refusal) string {
	msg := "turnwatch refused this model request (" + ref.Reason + ")"
	if ref.Message != "" {
		msg += ": " + strings.TrimSuffix(ref.Message, ".")
	}
	return msg + ". The turn is over; see kubectl describe agentturn for why."
}

// answer writes an error in the request's API's shape (plain text for a
// path no API owns).
func (g *Gateway) answer(w http.ResponseWriter, rt route, status int, msg string) {
	if !rt.known {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(rt.api.Error(status, msg))
}

// rewrite routes the request to the upstream with the key: nothing else of
// it changes but the host and, for a model request, Accept-Encoding (the
// meter reads the answer as sent: an encoded one could not be read).
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	rt, _ := pr.In.Context().Value(routeKey{}).(route)
	pr.SetURL(g.o.Upstream)
	if rt.model {
		pr.Out.Header.Del("Accept-Encoding")
	}
	if g.o.Key == "" {
		return
	}
	switch {
	case rt.known:
		pr.Out.Header.Set(rt.api.KeyHeader, rt.api.KeyPrefix+g.o.Key)
	case rt.header.name != "":
		pr.Out.Header.Set(rt.header.name, rt.header.prefix+g.o.Key)
	}
}

// upstreamError answers when the upstream could not be reached or its
// answer not read: 502 in the API's shape. The error is logged redacted
// (an upstream URL may carry a key of its own).
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	rt, _ := r.Context().Value(routeKey{}).(route)
	if errors.Is(err, context.Canceled) {
		return // the agent went away
	}
	g.o.Log.Error(errors.New(g.redact(err.Error())), "upstream", "api", rt.api.Name, "path", r.URL.Path)
	g.answer(w, rt, http.StatusBadGateway, "the turnwatch model gateway could not reach the model upstream")
}

// redact hides the key in s, whatever carried it there.
func (g *Gateway) redact(s string) string {
	if g.o.Key == "" {
		return s
	}
	return strings.ReplaceAll(s, g.o.Key, "[key]")
}
