package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// runsPath is the AgentRun collection's API path (group turnwatch.dev,
// version v1alpha1).
const runsPath = "/apis/turnwatch.dev/v1alpha1/namespaces/"

// runProgress writes the turn's progress straight into its run's status:
// one merge patch of steps, costUSD (the earlier turns' totals, told at
// start, plus this turn's so far) and progress (this turn's own), so that a
// report costs one API write and `kubectl get agentruns` shows it at once
// (docs/protocol.md). The admission policy turnwatch-sidecar-run-progress
// lets this credential write those fields only, of its own run's current
// turn, never lower. Trips and the final summary stay on the Pod.
type runProgress struct {
	client    *kubeClient
	namespace string
	run, turn string            // the run, and this turn (the own Pod's name)
	runUID    string            // the run's UID: the policy takes a report only with it
	prior     protocol.Progress // what the run's earlier turns counted
	last      protocol.Progress // the last report the run took
	// lag is how far behind the agent's log the sidecar read its last line
	// (noLag before a line with a timestamp); lastLag is the one the run
	// took.
	lag, lastLag time.Duration
}

// noLag is a lag not known.
const noLag time.Duration = -1

// readLag notes that the sidecar read a line at now whose log timestamp is
// at: the lag its reports carry. One clock serves both, the node's: the
// kubelet stamps the lines. A line stamped ahead of now counts as no lag.
func (rp *runProgress) readLag(at, now time.Time) {
	rp.lag = max(now.Sub(at), 0)
}

// due says whether a report of p is worth writing: its counts moved, or
// they did not go back and the lag moved to another whole second (a sidecar
// that falls behind, or catches up, tells within a period even while the
// agent counts no step).
func (rp *runProgress) due(p protocol.Progress) bool {
	if p.Ahead(rp.last) {
		return true
	}
	if p.Behind(rp.last) || rp.lag == noLag {
		return false
	}
	return rp.lastLag == noLag || rp.lag.Truncate(time.Second) != rp.lastLag.Truncate(time.Second)
}

// runStatusPatch is the merge patch of a run's status that reports a turn's
// progress: the three fields of twv1.AgentRunStatus the admission policy
// lets the sidecar write, with the API's own types. It is not a whole
// AgentRunStatus: that one's attempts has no omitempty, and a merge patch of
// it would reset attempts to 0.
type runStatusPatch struct {
	Status struct {
		Steps    int64             `json:"steps"`
		CostUSD  string            `json:"costUSD"`
		Progress *twv1.RunProgress `json:"progress"`
	} `json:"status"`
}

// body is the merge patch that reports p at now.
func (rp *runProgress) body(p protocol.Progress, now time.Time) []byte {
	var patch runStatusPatch
	total := rp.prior.Add(p)
	patch.Status.Steps, patch.Status.CostUSD = total.Steps, total.CostUSD()
	at := metav1.NewTime(now.Truncate(time.Second))
	patch.Status.Progress = &twv1.RunProgress{Turn: rp.turn, RunUID: rp.runUID, Steps: p.Steps, CostUSD: p.CostUSD(), Time: &at}
	if rp.lag != noLag {
		patch.Status.Progress.Lag = &metav1.Duration{Duration: rp.lag.Round(time.Millisecond)}
	}
	b, _ := json.Marshal(patch)
	return b
}

// write sends p; the run keeps it as the last report once it took it.
func (rp *runProgress) write(ctx context.Context, p protocol.Progress, now time.Time) error {
	if err := rp.client.patchRunStatus(ctx, rp.namespace, rp.run, rp.body(p, now)); err != nil {
		return err
	}
	rp.last, rp.lastLag = p, rp.lag
	return nil
}

// runProgressOf is the run writer cfg asks for, or nil: without a run name
// progress goes to the own Pod, as before the run took it.
func runProgressOf(cfg Options, client *kubeClient) *runProgress {
	if cfg.RunName == "" {
		return nil
	}
	// The manager renders the prior cost from Money, and the engine's
	// options refused a bad one at start: an unreadable one counts as zero.
	prior, err := protocol.ParseProgress(cfg.PriorSteps, cfg.PriorCostUSD)
	if err != nil {
		prior = protocol.Progress{Steps: cfg.PriorSteps}
	}
	return &runProgress{client: client, namespace: cfg.Namespace, run: cfg.RunName, runUID: cfg.RunUID, turn: cfg.PodName, prior: prior,
		lag: noLag, lastLag: noLag}
}

// patchRunStatus applies a JSON merge patch to an AgentRun's status. The
// answer (the whole run, prompt included) is read and dropped: the sidecar
// needs nothing from it.
func (c *kubeClient) patchRunStatus(ctx context.Context, namespace, run string, body []byte) error {
	u := strings.TrimSuffix(c.base, "/api/v1") + runsPath + url.PathEscape(namespace) + "/agentruns/" + url.PathEscape(run) +
		"/status?" + url.Values{"fieldManager": {fieldManager}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", string(types.MergePatchType))
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return apiError(resp.StatusCode, b, "PATCH", run)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// progressToRun writes p (and the lag) to the run when the period allows
// and p or the lag moved since the run's last report (due). A failed write is not retried here: the next
// call after the period carries a newer value anyway. A sidecar restarted
// mid-turn replays from its checkpoint or the start: until it passes what
// its predecessor reported, the policy refuses the lower figures, and the
// run keeps the higher ones.
func (r *reporter) progressToRun(ctx context.Context, p protocol.Progress) {
	if !r.progressDue() || !r.run.due(p) {
		return
	}
	r.lastProgress = r.clock.Now()
	if err := r.run.write(ctx, p, r.clock.Now()); err != nil {
		r.log.Info("writing progress to the run failed", "run", r.run.run, "err", err.Error())
		return
	}
	r.writes++
}
