package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"turnwatch.dev/turnwatch/pkg/explain"
)

func init() {
	commands["explain"] = command{
		summary: "show a recorded stream as a timeline: calls, errors, gaps, and what tripped",
		run:     runExplain,
	}
}

// runExplain: explain [engine flags] [--output text|json] [--color auto|always|never] FILE|-
func runExplain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ef engineFlags
	ef.register(fs)
	output := fs.String("output", "text", "text (for a person) or json (for tools)")
	fs.StringVar(output, "o", "text", "short for --output")
	color := fs.String("color", "auto", "auto (only on a terminal, unless NO_COLOR is set), always or never")
	gap := fs.Duration("gap", explain.DefaultGap, "shortest silence between two lines that the timeline shows")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: turnwatch-sidecar explain [--format FORMAT] [--guards FILE] [--prices FILE] [--output text|json] [--color auto|always|never] FILE|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || (*output != "text" && *output != "json") {
		fs.Usage()
		return 2
	}
	opts, err := ef.options()
	if err != nil {
		fmt.Fprintln(stderr, "explain:", err)
		return 2
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "explain:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	tl, err := explain.Stream(in, explain.Options{Format: opts.Format, Guards: opts.Guards, Prices: opts.Prices,
		PriorCostUSD: opts.PriorCostUSD, Audit: opts.Audit, GapAtLeast: *gap})
	if err != nil {
		fmt.Fprintln(stderr, "explain:", err)
		return 1
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tl); err != nil {
			return 1
		}
		return 0
	}
	if err := tl.WriteText(stdout, useColor(*color, stdout)); err != nil {
		return 1
	}
	return 0
}

// useColor: always, never, or auto (stdout is a terminal).
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := w.(*os.File)
	return ok && explain.IsTerminal(f)
}
