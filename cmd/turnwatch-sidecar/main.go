// Command turnwatch-sidecar is the in-Pod watchdog and its offline twins.
//
//	turnwatch-sidecar replay --format FORMAT [--guards FILE] [--prices FILE] FILE|-
//	turnwatch-sidecar explain --format FORMAT [--guards FILE] [-o text|json] FILE|-
//	turnwatch-sidecar watch  --format FORMAT [--guards FILE] [--prices FILE] [--grace D] -- COMMAND...
//	turnwatch-sidecar calibrate [--format FORMAT] [--guards FILE] [--json] PATH...
//	turnwatch-sidecar model --scenario NAME [--listen ADDR] [--log FILE]
//	turnwatch-sidecar gateway --format FORMAT (--upstream URL | --scenario NAME) [--listen ADDR] [--key-file F] [--token T]
//	turnwatch-sidecar probe
//
// main only dispatches: each subcommand lives in its own file and registers
// itself in commands from an init function, so more can be added without
// touching this file.
//
// The watchdog that `run` starts is package turnwatch.dev/turnwatch/sidecar;
// the files here hold the subcommands' flags and wiring.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// command is one subcommand: run gets the arguments after its name and
// returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands is filled by the subcommand files' init functions.
var commands = map[string]command{}

func main() { os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		return 2
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "turnwatch-sidecar: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("usage: turnwatch-sidecar COMMAND [flags]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	io.WriteString(w, b.String())
}
