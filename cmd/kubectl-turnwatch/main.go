// Command kubectl-turnwatch is turnwatch's kubectl plugin. With it on PATH,
// `kubectl turnwatch drill -f RUN.yaml` proves the guards on a run's own
// image: it runs the run once per scripted-model scenario and prints what
// each expected against what happened (drill.go, docs/drill.md), and so
// for a Job's, CronJob's, Pod's or Sandbox's pod template labelled for
// attach (drill_workload.go); and
// `kubectl turnwatch explain RUN` shows an AgentRun at a glance: every turn
// with its outcome, then the agent's stream of one turn (the one that
// faulted, by default) as a timeline of numbered tool calls, error answers,
// steps and cost so far, the silent streak, time gaps, and the streak that
// tripped with the detector's message. The timeline runs the sidecar's own
// engine over the Pod's log with the guards and prices the sidecar had
// (pkg/explain; `turnwatch-sidecar explain FILE` does the same for a file).
// `kubectl turnwatch explain pod/NAME` shows the turn of a Pod: a run's
// turn Pod's, or an attached Pod's (docs/attach.md, explain_pod.go).
//
//	kubectl turnwatch explain RUN|pod/NAME [-n NAMESPACE] [--turn NAME|ATTEMPT] [-o text|json]
//	                              [--color auto|always|never] [--kubeconfig FILE] [--context NAME]
//	kubectl turnwatch drill -f RUN.yaml|WORKLOAD.yaml [--scenario NAME|all] [-n NAMESPACE] [--timeout D]
//	                        [--parallel N] [--ttl D] [-o text|json] [--kubeconfig FILE] [--context NAME]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"turnwatch.dev/turnwatch/pkg/explain"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// flags are the plugin's: kubectl's kubeconfig flags and explain's own.
type flags struct {
	kubeconfig, context, namespace string
	turn, output, color            string
	gap                            time.Duration
	timeout                        time.Duration
}

const usageText = `usage: kubectl turnwatch explain RUN [flags]
       kubectl turnwatch explain pod/NAME [flags]

Shows an AgentRun's turns with their outcomes, then one turn's agent stream as
a timeline: numbered tool calls, error answers, steps and cost so far, the
silent streak, time gaps, and the streak that tripped with the detector's message.

pod/NAME shows the turn of a Pod: a run's turn Pod (its run, with that turn's
stream), or a Pod turnwatch attached to (docs/attach.md): its AgentTurn, with
the format, agent container and guards the turn records. A Pod with no turn
is an error saying what it lacks: the label turnwatch.dev/watch, its
namespace's label turnwatch.dev/attach=enabled, its sidecar, or the
manager's record.

flags:
`

// newKubeFlagSet is a flag set with kubectl's connection flags and the
// namespace (-n), whose help is nsHelp.
func newKubeFlagSet(name string, stderr io.Writer, kubeconfig, context, namespace *string, nsHelp string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(context, "context", "", "the kubeconfig context to use")
	fs.StringVar(namespace, "namespace", "", nsHelp)
	fs.StringVar(namespace, "n", "", "short for --namespace")
	return fs
}

func newFlagSet(f *flags, stderr io.Writer) *flag.FlagSet {
	fs := newKubeFlagSet("kubectl turnwatch explain", stderr, &f.kubeconfig, &f.context, &f.namespace, "the run's or Pod's namespace (default: the context's)")
	fs.StringVar(&f.turn, "turn", "", "the turn whose stream to show, by name or attempt (default: the faulted turn, else the last; not with pod/NAME)")
	fs.StringVar(&f.output, "output", "text", "text (for a person) or json (for tools)")
	fs.StringVar(&f.output, "o", "text", "short for --output")
	fs.StringVar(&f.color, "color", "auto", "auto (only on a terminal, unless NO_COLOR is set), always or never")
	fs.DurationVar(&f.gap, "gap", explain.DefaultGap, "shortest silence between two lines that the timeline shows")
	fs.DurationVar(&f.timeout, "request-timeout", 30*time.Second, "how long the API calls may take")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	return fs
}

// parse reads flags given before and after the positional arguments, as
// kubectl does (`explain RUN -n NS`).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseCommand parses a command's flags and positional arguments. done
// says there is nothing more to do, with the exit code: -h or --help
// printed the command's usage on stdout and exits 0, as kubectl's own
// commands do; a bad flag printed it on stderr and exits 2.
func parseCommand(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	var out bytes.Buffer
	fs.SetOutput(&out)
	pos, err := parse(fs, args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(out.Bytes())
		return nil, 0, true
	}
	_, _ = stderr.Write(out.Bytes())
	if err != nil {
		return nil, 2, true
	}
	return pos, 0, false
}

// commandsUsage lists the commands, for a call that names none.
const commandsUsage = `usage: kubectl turnwatch explain RUN|pod/NAME [flags]
       kubectl turnwatch drill -f RUN.yaml|WORKLOAD.yaml [flags]

  explain   an AgentRun's (or a Pod's) turns and one turn's agent stream as a timeline
  drill     run an AgentRun (or a Job's, CronJob's, Pod's or Sandbox's pod template)
            once per scripted-model scenario and show what its guards caught

kubectl turnwatch COMMAND -h lists the command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "explain":
			return runExplain(args[1:], stdout, stderr)
		case "drill":
			return runDrill(args[1:], stdout, stderr)
		case "-h", "--help", "help":
			fmt.Fprint(stdout, commandsUsage)
			return 0
		default:
			fmt.Fprintf(stderr, "kubectl turnwatch: unknown command %q\n", args[0])
		}
	}
	fmt.Fprint(stderr, commandsUsage)
	return 2
}

// runExplain is `kubectl turnwatch explain`.
func runExplain(args []string, stdout, stderr io.Writer) int {
	var f flags
	fs := newFlagSet(&f, stderr)
	pos, code, done := parseCommand(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 || (f.output != "text" && f.output != "json") {
		fs.Usage()
		return 2
	}
	loader := clientConfig(f.kubeconfig, f.context, f.namespace)
	cfg, err := loader.ClientConfig()
	if err != nil {
		fmt.Fprintln(stderr, "kubectl turnwatch:", err)
		return 1
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		fmt.Fprintln(stderr, "kubectl turnwatch:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	explainOne := explainRun
	name, isPod := podArg(pos[0])
	if isPod {
		explainOne = explainPod
	} else {
		name = pos[0]
	}
	r, err := explainOne(ctx, cfg, ns, name, f.turn, f.gap)
	if err != nil {
		fmt.Fprintln(stderr, "kubectl turnwatch:", err)
		return 1
	}
	if f.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if enc.Encode(r) != nil {
			return 1
		}
		return 0
	}
	if r.WriteText(stdout, useColor(f.color, stdout)) != nil {
		return 1
	}
	return 0
}

// clientConfig loads the kubeconfig as kubectl does, with its flags over it.
func clientConfig(kubeconfig, context, namespace string) clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: context, Context: contextNamespace(namespace)})
}

func useColor(mode string, w io.Writer) bool {
	switch strings.ToLower(mode) {
	case "always":
		return true
	case "never":
		return false
	}
	file, ok := w.(*os.File)
	return ok && explain.IsTerminal(file)
}
