// Command fakeagent is the scripted agent of turnwatch's end-to-end tests and
// demo: it replays a recorded agent event stream with its timing, as the
// agent container of an AgentRun, so a Pod behaves like a real agent CLI
// without any model behind it.
//
//	fakeagent --scenario identicalLoop --format pi [--speed 4] [--exit-code 0] [--hold]
//	fakeagent --file stream.log          replay any file ("-" for stdin)
//	fakeagent --scenario silentRun --pad 24000 [--dump]   pad a pi stream (pad.go)
//	fakeagent --rate 100 --for 5m        a healthy pi stream at 100 events a second (steady.go)
//	fakeagent --scenario healthy --format claude --hostile-call 12582912   a hostile agent's stream (hostile.go)
//	fakeagent --list                     which scenarios exist in which format
//	fakeagent gen -out scenarios         regenerate the embedded streams
//	fakeagent attack --namespace NS --pod NAME   play a hostile agent (attack.go)
//	fakeagent react --react changes --settings FILE   a live agent that runs Claude Code hooks (react.go)
//
// Input lines carry the `kubectl logs --timestamps` prefix; the gaps between
// them are slept (divided by --speed) and the lines are printed without the
// prefix on stdout. Nothing else is ever written to stdout or stderr while
// replaying: the container log must hold only the stream.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

//go:embed scenarios
var scenarios embed.FS

func main() {
	if len(os.Args) > 1 && os.Args[1] == "gen" {
		fs := flag.NewFlagSet("gen", flag.ExitOnError)
		out := fs.String("out", "scenarios", "folder to write FORMAT/SCENARIO.log into")
		_ = fs.Parse(os.Args[2:])
		if err := writeScenarios(*out); err != nil {
			fail(err)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "react" {
		os.Exit(react(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "attack" {
		os.Exit(attack(os.Args[2:], os.Stdout))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "", "embedded scenario: "+strings.Join(scriptNames(), ", "))
	format := fs.String("format", "pi", "stream format: "+strings.Join(Formats, ", "))
	file := fs.String("file", "", "replay this file instead of a scenario (- for stdin)")
	speed := fs.Float64("speed", 1, "replay speed factor: 2 plays twice as fast")
	exit := fs.Int("exit-code", 0, "exit code once the stream is played")
	hold := fs.Bool("hold", false, "after the stream, keep running until SIGTERM (a hung agent)")
	list := fs.Bool("list", false, "print which scenarios exist in which format")
	padBytes := fs.Int("pad", 0, "after each line, this many bytes of padding lines (pi session events, which no detector reads)")
	dump := fs.Bool("dump", false, "print the stream as it would be played, timestamps kept, without waiting (for replay)")
	rate := fs.Int("rate", 0, "instead of a scenario, write a healthy pi stream at this many events a second (with --for)")
	dur := fs.Duration("for", time.Minute, "how long --rate writes")
	hostileCall := fs.Int("hostile-call", 0, "play a hostile agent (claude only): before the result, one call of this many bytes under a tool name with terminal escapes, and a result whose total_cost_usd is 0 (hostile.go)")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if *rate > 0 {
		return runSteady(*rate, *dur, *exit, stdout, stderr)
	}
	if *list {
		fmt.Fprint(stdout, matrix())
		return 0
	}
	in, err := open(*scenario, *format, *file)
	if err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 2
	}
	defer in.Close()
	var stream io.Reader = in
	if *padBytes > 0 {
		if *file == "" && *format != "pi" {
			fmt.Fprintln(stderr, "fakeagent: --pad writes pi events: it needs --format pi")
			return 2
		}
		stream = padded(in, *padBytes)
	}
	if *hostileCall > 0 {
		if *format != "claude" {
			fmt.Fprintln(stderr, "fakeagent: --hostile-call writes claude events: it needs --format claude")
			return 2
		}
		stream = hostile(stream, *hostileCall)
	}
	if *dump {
		if _, err := io.Copy(stdout, stream); err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			return 1
		}
		return 0
	}

	// The kubelet stops the agent with SIGTERM; die at once like a CLI would.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sigs; os.Exit(143) }()

	if _, err := Replay(stream, stdout, *speed, realClock{}); err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 1
	}
	if *hold {
		select {}
	}
	return *exit
}

// open returns the stream to replay: a file, stdin, or an embedded scenario.
func open(scenario, format, file string) (io.ReadCloser, error) {
	switch {
	case file == "-":
		return io.NopCloser(os.Stdin), nil
	case file != "":
		return os.Open(file)
	case scenario == "":
		return nil, errors.New("give --scenario NAME (and --format) or --file PATH; --list shows the scenarios")
	}
	if why, ok := Missing[format+"/"+scenario]; ok {
		return nil, fmt.Errorf("scenario %q does not exist in format %q: %s", scenario, format, why)
	}
	f, err := scenarios.Open("scenarios/" + format + "/" + scenario + ".log")
	if err != nil {
		return nil, fmt.Errorf("no scenario %q in format %q (--list shows them)", scenario, format)
	}
	return f, nil
}

// runSteady plays the --rate stream; SIGTERM ends it at once.
func runSteady(rate int, d time.Duration, exit int, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := steady(ctx, stdout, rate, d); err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 143
	}
	return exit
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fakeagent:", err)
	os.Exit(1)
}
