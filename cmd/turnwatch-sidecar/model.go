//go:build !turnwatch_nodrill

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

func init() {
	commands["model"] = command{
		summary: "serve the scripted model (a scenario, no real model) on loopback",
		run:     runModel,
	}
}

// runModel: model --scenario NAME [--listen ADDR] [--log FILE] [--error-status N] [--pause D]
//
// It prints the address it listens on as its first stdout line, then serves
// until SIGTERM or SIGINT. Only loopback addresses are accepted: the model
// is for CLIs on the same host or Pod.
func runModel(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "healthy", "scenario to play: "+strings.Join(scriptedmodel.Names(), ", "))
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on (port 0 picks one)")
	logPath := fs.String("log", "", "append one JSON line per request to this file")
	status := fs.Int("error-status", 400, "HTTP status the apiError scenario answers with")
	pause := fs.Duration("pause", 10*time.Minute, "how long the stall scenario pauses mid-stream")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sc, err := scriptedmodel.Lookup(*scenario)
	if err != nil {
		fmt.Fprintln(stderr, "model:", err)
		return 2
	}
	if err := loopbackOnly(*listen); err != nil {
		fmt.Fprintln(stderr, "model:", err)
		return 2
	}
	srv, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, LogPath: *logPath, ErrorStatus: *status, Pause: *pause})
	if err != nil {
		fmt.Fprintln(stderr, "model:", err)
		return 1
	}
	defer srv.Close()
	return serveUntilSignal("model", srv, *listen, stdout, stderr)
}
