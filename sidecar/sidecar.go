// Package sidecar is the in-Pod watchdog: it follows the agent container's
// output (its log through the API server, or a stream file), feeds it to the
// monitor engine, and reports progress, nudges, trips and the summary as
// conditions on its own Pod (docs/protocol.md). The command
// turnwatch-sidecar (cmd/turnwatch-sidecar) runs it as `turnwatch-sidecar
// run`; its offline subcommands use Calls to judge tool calls for the
// agent's hook as the watchdog does.
package sidecar

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// Options is what the watchdog needs, from the env the controller sets
// (docs/protocol.md) or the command's flags.
type Options struct {
	Format       string
	Guards       monitor.Guards
	Prices       monitor.Prices
	PriorCostUSD string
	// Audit names the detectors whose trips are only reported, as
	// would-trips (protocol.EnvAudit, docs/policies.md#audit).
	Audit          []string
	PodName        string
	Namespace      string
	AgentContainer string
	StreamFile     string
	// RunName is the run whose status carries this turn's progress ("":
	// progress goes to the own Pod's Progress condition); PriorSteps are
	// its earlier turns' steps.
	RunName    string
	RunUID     string
	PriorSteps int64
	// ProgressPeriod is the least time between two Progress writes.
	ProgressPeriod time.Duration
	// Drain is how long, after SIGTERM, the sidecar keeps reading what the
	// agent wrote before it makes the final evaluation.
	Drain time.Duration
	// WriteGrace is how long, after SIGTERM and the drain, the last writes
	// may take.
	WriteGrace time.Duration
	Kubeconfig string
	MaxLine    int
	// TerminationLog is where the sidecar writes why it ends when retrying
	// cannot help (the container's terminationMessagePath).
	TerminationLog string
	// StateDir is the sidecar's own volume for its checkpoint ("" for none).
	StateDir string
	// NudgeDir is the volume shared with the agent, where nudges are
	// delivered when the guards say so ("" for none).
	NudgeDir string
	// Model is the model API the sidecar serves on the Pod's loopback for
	// its whole life (model.go): the gateway, in front of a provider or a
	// drill's scripted model.
	Model Model
	// BudgetLeftUSD is what the namespace's budgets had left when the turn
	// started (protocol.EnvBudgetLeftUSD); "" when none applies.
	BudgetLeftUSD string
	// Budget names whose budget that is (protocol.EnvBudget).
	Budget string
	// Clock is the one time source of the watchdog and its log stream's
	// pace (nil: the real clock); tests inject a fake one, as the
	// controllers take theirs.
	Clock clock.Clock
}

// Defaults where docs/protocol.md leaves the knob to the sidecar.
const (
	DefaultProgressPeriod = 15 * time.Second
	// The kubelet gives a container 30 s between SIGTERM and SIGKILL by
	// default: drain plus the last writes stay well inside it.
	DefaultDrain      = protocol.SidecarDrain
	DefaultWriteGrace = protocol.SidecarWriteGrace
)

// Validate says what is missing or wrong in o: the own Pod's identity, and
// what the engine refuses (format, guards, prior cost).
func (o Options) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{protocol.EnvPodName, o.PodName}, {protocol.EnvPodNamespace, o.Namespace}, {protocol.EnvAgentContainer, o.AgentContainer},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (env or flag)", strings.Join(missing, ", "))
	}
	if err := o.Model.validate(); err != nil {
		return err
	}
	_, err := monitor.New(o.engineOptions()) // format, guards, prior cost, audited detectors
	return err
}

// clock is o.Clock, or the real clock when none is set.
func (o Options) clock() clock.Clock {
	if o.Clock == nil {
		return clock.RealClock{}
	}
	return o.Clock
}

func (o Options) engineOptions() monitor.Options {
	return monitor.Options{Format: o.Format, Guards: o.Guards, Prices: o.Prices, PriorCostUSD: o.PriorCostUSD, Audit: o.Audit,
		Metered: o.Model.on(), BudgetLeftUSD: o.BudgetLeftUSD, Budget: o.Budget}
}

// Run is the watchdog, with the in-cluster credential (or
// opts.Kubeconfig): it watches the turn until its output is over, reports,
// and then waits for ctx (SIGTERM), reads for opts.Drain more and makes the
// last writes within opts.WriteGrace. An error that retrying cannot fix is
// told on the Pod before Run returns it.
func Run(ctx context.Context, opts Options, log logr.Logger) error {
	r, err := newKubeRunner(opts, log)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	return r.run(ctx)
}
