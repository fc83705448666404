package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/sidecar"
)

func init() {
	commands["run"] = command{
		summary: "in-Pod watchdog: follow the agent container's output and report on the own Pod",
		run:     runCommand,
	}
}

// namespaceFile is where the projected service-account volume puts the
// Pod's namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultTerminationLog is the kubelet's default terminationMessagePath.
const defaultTerminationLog = "/dev/termination-log"

// parseRunConfig reads the watchdog's options from the env through getenv
// (docs/protocol.md), then from the flags in args, which take precedence.
func parseRunConfig(args []string, getenv func(string) string, stderr io.Writer) (sidecar.Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c sidecar.Options
	var guards, override, limits, prices, period, modelPort, audit string
	fs.StringVar(&c.Format, "format", or(getenv(protocol.EnvFormat), monitor.FormatAuto), "stream format: "+strings.Join(monitor.Formats, " | ")+" [$"+protocol.EnvFormat+"]")
	fs.StringVar(&guards, "guards", getenv(protocol.EnvGuards), "guards: a JSON object, or a file holding one [$"+protocol.EnvGuards+"]")
	fs.StringVar(&override, "guards-override", getenv(protocol.EnvGuardsOverride), "an attached Pod's guards annotation, over --guards [$"+protocol.EnvGuardsOverride+"]")
	fs.StringVar(&limits, "guard-limits", getenv(protocol.EnvGuardLimits), "limits that cap --guards-override: a JSON object [$"+protocol.EnvGuardLimits+"]")
	fs.StringVar(&prices, "prices", getenv(protocol.EnvPrices), "price table: JSON, or a file holding it [$"+protocol.EnvPrices+"]")
	fs.StringVar(&audit, "audit", getenv(protocol.EnvAudit), "detectors whose trips are only reported (would-trips), comma-separated [$"+protocol.EnvAudit+"]")
	fs.StringVar(&c.PriorCostUSD, "prior-cost-usd", getenv(protocol.EnvPriorCostUSD), "what earlier turns of the run cost [$"+protocol.EnvPriorCostUSD+"]")
	fs.StringVar(&c.RunName, "run", getenv(protocol.EnvRunName), "the run whose status shows this turn's progress; \"\" writes it on the own Pod [$"+protocol.EnvRunName+"]")
	fs.StringVar(&c.RunUID, "run-uid", getenv(protocol.EnvRunUID), "the run's UID, carried in each progress report [$"+protocol.EnvRunUID+"]")
	fs.Int64Var(&c.PriorSteps, "prior-steps", envInt(getenv(protocol.EnvPriorSteps)), "the steps of the run's earlier turns [$"+protocol.EnvPriorSteps+"]")
	fs.StringVar(&c.PodName, "pod", getenv(protocol.EnvPodName), "the own Pod's name [$"+protocol.EnvPodName+"]")
	fs.StringVar(&c.Namespace, "namespace", getenv(protocol.EnvPodNamespace), "the own Pod's namespace [$"+protocol.EnvPodNamespace+"]")
	fs.StringVar(&c.AgentContainer, "container", getenv(protocol.EnvAgentContainer), "the agent container, whose log is followed [$"+protocol.EnvAgentContainer+"]")
	fs.StringVar(&c.StreamFile, "stream-file", getenv(protocol.EnvStreamFile), "follow this file instead of the container log [$"+protocol.EnvStreamFile+"]")
	fs.StringVar(&period, "progress-period", getenv(protocol.EnvProgressPeriod), "least time between Progress writes: seconds or a duration (default 15s) [$"+protocol.EnvProgressPeriod+"]")
	fs.DurationVar(&c.Drain, "drain", sidecar.DefaultDrain, "after SIGTERM, how long to keep reading the agent's output")
	fs.DurationVar(&c.WriteGrace, "write-grace", sidecar.DefaultWriteGrace, "after SIGTERM and the drain, how long the last writes may take")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig to use instead of the in-cluster credential")
	fs.IntVar(&c.MaxLine, "max-line", monitor.DefaultMaxLine, "longest line kept whole; longer ones count as unparsed")
	fs.StringVar(&c.StateDir, "state-dir", getenv(protocol.EnvStateDir), "the sidecar's own directory for its checkpoint; \"\" replays the log on restart [$"+protocol.EnvStateDir+"]")
	fs.StringVar(&c.NudgeDir, "nudge-dir", getenv(nudgefile.EnvDir), "the volume shared with the agent, for nudges (with guards nudgeDelivery file) [$"+nudgefile.EnvDir+"]")
	fs.StringVar(&modelPort, "model-port", getenv(protocol.EnvModelPort), "the loopback port the model gateway listens on [$"+protocol.EnvModelPort+"]")
	fs.StringVar(&c.Model.Scenario, "drill-scenario", getenv(protocol.EnvDrillScenario), "a drill turn's scenario: the gateway's upstream is the scripted model playing it [$"+protocol.EnvDrillScenario+"]")
	fs.StringVar(&c.Model.Upstream, "model-upstream", getenv(protocol.EnvModelUpstream), "the provider's base URL the gateway forwards to [$"+protocol.EnvModelUpstream+"]")
	fs.StringVar(&c.Model.KeyFile, "model-key-file", getenv(protocol.EnvModelKeyFile), "the file holding the upstream's key [$"+protocol.EnvModelKeyFile+"]")
	fs.StringVar(&c.Model.Token, "model-token", getenv(protocol.EnvModelToken), "the placeholder key the agent holds; requests carrying another are refused [$"+protocol.EnvModelToken+"]")
	fs.BoolVar(&c.Model.Hold, "model-hold", getenv(protocol.EnvModelHold) == "true", "hold a refused model request open until the agent goes, instead of answering it [$"+protocol.EnvModelHold+"]")
	fs.StringVar(&c.BudgetLeftUSD, "budget-left-usd", getenv(protocol.EnvBudgetLeftUSD), "what the namespace's budgets had left when the turn started [$"+protocol.EnvBudgetLeftUSD+"]")
	fs.StringVar(&c.Budget, "budget", getenv(protocol.EnvBudget), "the policy whose budget that is, for the trip's message [$"+protocol.EnvBudget+"]")
	fs.StringVar(&c.TerminationLog, "termination-log", defaultTerminationLog, "where to write why the sidecar ends, when retrying cannot help (\"\" for nowhere)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("run takes no arguments, got %q", fs.Args())
	}
	c.Audit = protocol.ParseAudit(audit)
	if err := monitor.ValidateAudit(c.Audit); err != nil {
		return c, fmt.Errorf("%s: %w", protocol.EnvAudit, err)
	}
	var err error
	if c.Guards, err = monitor.ParseGuards(overridden(inlineOrFile(guards), override, limits, stderr)); err != nil {
		return c, err
	}
	if c.Prices, err = monitor.ParsePrices(inlineOrFile(prices)); err != nil {
		return c, err
	}
	if c.ProgressPeriod, err = parsePeriod(period); err != nil {
		return c, err
	}
	if c.Model.Port, err = parsePort(modelPort); err != nil {
		return c, err
	}
	if c.Namespace == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			c.Namespace = strings.TrimSpace(string(b))
		}
	}
	return c, c.Validate()
}

// overridden lays an attached Pod's guards annotation over its namespace's
// guards, capped to the limits (docs/attach.md). An annotation that does
// not read is said on stderr and left out: the namespace's guards hold
// (the manager says so on the turn, GuardsInvalid).
func overridden(guards []byte, override, limits string, stderr io.Writer) []byte {
	if strings.TrimSpace(override) == "" && strings.TrimSpace(limits) == "" {
		return guards
	}
	out, capped, err := monitor.OverrideGuards(guards, []byte(override), []byte(limits))
	if err != nil {
		fmt.Fprintf(stderr, "turnwatch-sidecar: %v: the namespace's guards hold\n", err)
	}
	if len(capped) > 0 {
		fmt.Fprintf(stderr, "turnwatch-sidecar: the guards annotation asked past the limits of %s: capped\n", strings.Join(capped, ", "))
	}
	return out
}

// inlineOrFile returns s itself when it is JSON, else the file it names.
func inlineOrFile(s string) []byte {
	t := strings.TrimSpace(s)
	if t == "" || strings.HasPrefix(t, "{") {
		return []byte(t)
	}
	b, err := os.ReadFile(t)
	if err != nil {
		return []byte(t) // the parser reports it as bad JSON, with the text
	}
	return b
}

// parsePeriod reads whole seconds ("15") or a Go duration ("15s").
func parsePeriod(s string) (time.Duration, error) {
	if s == "" {
		return sidecar.DefaultProgressPeriod, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("progress period %q: want seconds or a duration", s)
	}
	return d, nil
}

// parsePort reads the drill's port ("" is none); Options.Validate checks
// its range.
func parsePort(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s %q: not a port number", protocol.EnvModelPort, s)
	}
	return n, nil
}

// envInt reads a whole number from the env; anything else is 0.
func envInt(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// runCommand is `turnwatch-sidecar run`.
func runCommand(args []string, _ io.Reader, _, stderr io.Writer) int {
	log := logr.FromSlogHandler(slog.NewJSONHandler(stderr, nil)).WithName("run")
	cfg, err := parseRunConfig(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "turnwatch-sidecar run: %v\n", err)
		return 2
	}
	if soft := sidecar.LimitMemory("/sys/fs/cgroup", os.Getenv); soft > 0 {
		log.Info("soft memory limit set from the container's", "bytes", soft)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := sidecar.Run(ctx, cfg, log); err != nil {
		log.Error(err, "run failed")
		return 1
	}
	return 0
}
