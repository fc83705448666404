package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func init() {
	commands["replay"] = command{
		summary: "run the detectors over a recorded stream and print the JSON report",
		run:     runReplay,
	}
}

// engineFlags are the flags replay and watch share.
type engineFlags struct {
	format, guards, prices, prior, audit string
	maxLine                              int
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", monitor.FormatAuto, "stream format: "+strings.Join(agents.Formats(), ", ")+" or "+monitor.FormatAuto)
	fs.StringVar(&f.guards, "guards", "", "JSON file with any subset of the guard names (the rest default)")
	fs.StringVar(&f.prices, "prices", "", "JSON price table merged over the built-in one")
	fs.StringVar(&f.prior, "prior-cost", "", "what earlier turns of the run cost, decimal USD (weighed against maxCostUSD; the report is this stream's own cost)")
	fs.StringVar(&f.audit, "audit", "", "detectors whose trips only record (would-trips), comma-separated, as the sidecar's "+protocol.EnvAudit)
	fs.IntVar(&f.maxLine, "max-line", monitor.DefaultMaxLine, "longest line read whole, in bytes; longer lines are skipped and counted unparsed")
}

// options reads the guard and price files into engine options.
func (f *engineFlags) options() (monitor.Options, error) {
	opts := monitor.Options{Format: f.format, Guards: monitor.DefaultGuards(), Prices: monitor.DefaultPrices(), PriorCostUSD: f.prior,
		Audit: protocol.ParseAudit(f.audit)}
	if err := monitor.ValidateAudit(opts.Audit); err != nil {
		return opts, err
	}
	if f.guards != "" {
		data, err := os.ReadFile(f.guards)
		if err != nil {
			return opts, err
		}
		if opts.Guards, err = monitor.ParseGuards(data); err != nil {
			return opts, fmt.Errorf("%s: %w", f.guards, err)
		}
	}
	if f.prices != "" {
		data, err := os.ReadFile(f.prices)
		if err != nil {
			return opts, err
		}
		if opts.Prices, err = monitor.ParsePrices(data); err != nil {
			return opts, fmt.Errorf("%s: %w", f.prices, err)
		}
	}
	return opts, nil
}

// runReplay: replay --format FORMAT [--guards FILE] FILE|-
func runReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ef engineFlags
	ef.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: turnwatch-sidecar replay [--format FORMAT] [--guards FILE] [--prices FILE] FILE|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	opts, err := ef.options()
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "replay:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	report, err := replay(in, opts, ef.maxLine)
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(report); err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 1
	}
	return 0
}

// replay runs the engine over a whole stream as production would
// (monitor.Replay).
func replay(in io.Reader, opts monitor.Options, maxLine int) (monitor.Report, error) {
	eng, err := monitor.New(opts)
	if err != nil {
		return monitor.Report{}, err
	}
	report, err := monitor.Replay(eng, in, maxLine)
	if err != nil {
		return monitor.Report{}, err
	}
	return report, nil
}
