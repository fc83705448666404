package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/gateway"
	"turnwatch.dev/turnwatch/pkg/modelapi"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

func init() {
	commands["gateway"] = command{
		summary: "serve the model gateway (an upstream, or the scripted model) on loopback",
		run:     runGateway,
	}
}

// scriptedUpstream serves a scenario of the scripted model in process, its
// requests logged to logPath when set: the gateway in scripted mode, as a
// drill runs it (gateway_drill.go; nil in a sidecar built without the
// drill).
var scriptedUpstream func(scenario, logPath string) (http.RoundTripper, io.Closer, error)

// scriptedURL is the upstream the gateway names in scripted mode: never
// dialled, the transport serves it in process.
const scriptedURL = "http://scripted-model.invalid"

// gatewayFlags are the gateway subcommand's flags.
type gatewayFlags struct {
	listen, upstream, format, keyFile, token, scenario, log string
	refuseAfter                                             int
}

// runGateway: gateway --listen ADDR (--upstream URL | --scenario NAME) --format FORMAT
// [--key-file F] [--token T] [--log FILE] [--refuse-after N]
//
// It prints the gateway's URL as its first stdout line, logs each model
// message end as one JSON line on stderr ({"end":true,...}), and serves
// until SIGTERM or SIGINT. Only loopback addresses are accepted.
func runGateway(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var f gatewayFlags
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "loopback address to listen on (port 0 picks one)")
	fs.StringVar(&f.upstream, "upstream", "", "the model's base URL; without it, --scenario's scripted model")
	fs.StringVar(&f.format, "format", "", "the agent CLI's format (its refusal status): "+strings.Join(agents.Formats(), ", "))
	fs.StringVar(&f.keyFile, "key-file", "", "file holding the upstream's key")
	fs.StringVar(&f.token, "token", "", "the placeholder key the agent holds; a request with another is refused")
	fs.StringVar(&f.scenario, "scenario", "", "serve the scripted model playing this scenario (scripted mode, no --upstream)")
	fs.StringVar(&f.log, "log", "", "scripted mode: append one JSON line per request the model got to this file")
	fs.IntVar(&f.refuseAfter, "refuse-after", 0, "refuse every model request after this many were forwarded (0: never), as a spent budget")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o, closer, err := f.options(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 2
	}
	if closer != nil {
		defer closer.Close()
	}
	g, err := gateway.New(o)
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 2
	}
	return serveUntilSignal("gateway", g, f.listen, stdout, stderr)
}

// options turns the flags into the gateway's options.
func (f gatewayFlags) options(stderr io.Writer) (gateway.Options, io.Closer, error) {
	cli, ok := agents.Lookup(f.format)
	if !ok {
		return gateway.Options{}, nil, fmt.Errorf("--format %q: one of %s", f.format, strings.Join(agents.Formats(), ", "))
	}
	if err := loopbackOnly(f.listen); err != nil {
		return gateway.Options{}, nil, err
	}
	o := gateway.Options{Token: f.token, Refusal: cli.Refusal, Deltas: cli.ModelSide().Deltas,
		Observe: endLogger(stderr), Log: funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{})}
	if f.keyFile != "" {
		b, err := os.ReadFile(f.keyFile)
		if err != nil {
			return o, nil, fmt.Errorf("--key-file: %w", err) // the path, not the key
		}
		o.Key = strings.TrimSpace(string(b))
	}
	if f.refuseAfter > 0 {
		o.Gate = refuseAfter(f.refuseAfter)
	}
	var closer io.Closer
	switch {
	case f.upstream != "" && f.scenario != "":
		return o, nil, errors.New("--upstream or --scenario, not both")
	case f.upstream != "":
		u, err := url.Parse(f.upstream)
		if err != nil {
			return o, nil, fmt.Errorf("--upstream: %w", err)
		}
		o.Upstream = u
	case f.scenario != "":
		if scriptedUpstream == nil {
			return o, nil, errors.New("--scenario: this turnwatch-sidecar is built without the drill (tag turnwatch_nodrill)")
		}
		t, c, err := scriptedUpstream(f.scenario, f.log)
		if err != nil {
			return o, nil, err
		}
		o.Upstream, _ = url.Parse(scriptedURL)
		o.Transport, closer = t, c
	default:
		return o, nil, errors.New("--upstream or --scenario is required")
	}
	return o, closer, nil
}

// refuseAfter is a Gate that lets n model requests through, then refuses
// each as a spent budget.
func refuseAfter(n int) func() *gateway.Refusal {
	var asked atomic.Int64
	return func() *gateway.Refusal {
		if asked.Add(1) <= int64(n) {
			return nil
		}
		return &gateway.Refusal{Reason: "budget", Message: fmt.Sprintf("the gateway's budget of %d model requests is spent", n)}
	}
}

// endLogger writes each model message end as one JSON line.
func endLogger(w io.Writer) func(monitor.ModelEvent) {
	var mu sync.Mutex
	return func(e monitor.ModelEvent) {
		if !e.End {
			return
		}
		b, _ := json.Marshal(struct {
			End   bool          `json:"end"`
			Model string        `json:"model"`
			Usage monitor.Usage `json:"usage"`
			Stop  string        `json:"stop"`
		}{true, e.Model, e.Usage, e.Stop})
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s\n", b)
	}
}

// serveUntilSignal serves h (the scripted model, or the gateway) on addr
// within modelapi's bounds, prints its URL, and serves until SIGTERM or
// SIGINT; name heads its errors.
func serveUntilSignal(name string, h http.Handler, addr string, stdout, stderr io.Writer) int {
	// The signals are ours before the URL is told: a caller may signal as
	// soon as it has served a request.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	hs, done := modelapi.Serve(h, ln)
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	case err := <-done:
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}

// loopbackOnly refuses a listen address that is not a loopback IP: the
// scripted model and the gateway serve the CLIs of their own host or Pod.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: turnwatch-sidecar serves models on a loopback IP only (127.0.0.0/8 or ::1)", addr)
	}
	return nil
}
