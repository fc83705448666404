package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func init() {
	commands["probe"] = command{
		summary: "startupProbe: exit 0 once the drill's model listens and the nudges volume is ready",
		run:     runProbe,
	}
}

// probeTimeout bounds the connect to the drill's model: the probe's period
// is 1s.
const probeTimeout = time.Second

// probeInput is what the probe's checks read: the sidecar container's env,
// and the two ways it looks at the sidecar.
type probeInput struct {
	getenv func(string) string
	// dial connects to a loopback address within probeTimeout.
	dial func(addr string) error
	// ready says why a nudges volume is not ready (nudgefile.Ready).
	ready func(dir string) error
}

// probeChecks are the startupProbe's checks, in order: each says why the
// sidecar is not ready yet, or passes.
var probeChecks = []func(probeInput) (reason string, failed bool){
	drillListens,
	nudgesReady,
}

// drillListens: on a drill turn, the scripted model accepts a connection
// on its loopback port (the agent's first request must find it).
func drillListens(in probeInput) (string, bool) {
	p := in.getenv(protocol.EnvModelPort)
	if p == "" {
		return "", false
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Sprintf("%s %q: not a port number", protocol.EnvModelPort, p), true
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := in.dial(addr); err != nil {
		return fmt.Sprintf("the drill's scripted model does not accept on %s: %v", addr, err), true
	}
	return "", false
}

// nudgesReady: with a nudges volume, the sidecar put turnwatch-hook and the
// adapters there (it writes nudgefile.ReadyFile after them).
func nudgesReady(in probeInput) (string, bool) {
	dir := in.getenv(nudgefile.EnvDir)
	if dir == "" {
		return "", false
	}
	if err := in.ready(dir); err != nil {
		return fmt.Sprintf("the nudges volume %s is not ready (turnwatch-hook and the adapters not in place): %v", dir, err), true
	}
	return "", false
}

// probe runs the checks; the first that fails says why.
func probe(in probeInput) (string, bool) {
	for _, check := range probeChecks {
		if reason, failed := check(in); failed {
			return reason, true
		}
	}
	return "", false
}

func dialLoopback(addr string) error {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	return c.Close()
}

// runProbe is `turnwatch-sidecar probe`, the sidecar container's
// startupProbe on a drill turn: exit 0 when ready, else 1 with the reason
// on one stderr line.
func runProbe(args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "turnwatch-sidecar probe: takes no arguments, got %q\n", args)
		return 2
	}
	if reason, failed := probe(probeInput{getenv: os.Getenv, dial: dialLoopback, ready: nudgefile.Ready}); failed {
		fmt.Fprintln(stderr, "turnwatch-sidecar probe: "+reason)
		return 1
	}
	return 0
}
