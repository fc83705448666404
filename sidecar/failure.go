package sidecar

import (
	"context"
	"errors"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// failure is an error that retrying cannot fix: the sidecar ends with it,
// loudly, so that the turn settles infra with the reason instead of the
// agent running unwatched (docs/protocol.md, ConditionFailed).
type failure struct {
	reason string // one of protocol.SidecarFailureReasons
	err    error
}

func (f *failure) Error() string { return f.reason + ": " + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// logFailure classifies an error of the log stream: refused or not found is
// for good; anything else (the agent's container not started yet answers
// 400, a dropped connection, a 5xx) is retried.
func logFailure(err error) *failure {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return &failure{protocol.ReasonLogForbidden, err}
	case apierrors.IsNotFound(err):
		return &failure{protocol.ReasonLogNotFound, err}
	}
	return nil
}

// failureOf is the failure that ended the sidecar, if err is one: a log
// failure as the source reported it, or the own Pod refused or gone.
func failureOf(err error) *failure {
	var f *failure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &f):
		return f
	case apierrors.IsForbidden(err):
		return &failure{protocol.ReasonPodForbidden, err}
	case apierrors.IsNotFound(err):
		return &failure{protocol.ReasonPodNotFound, err}
	}
	return nil
}

// maxTermination is what the kubelet keeps of a termination message.
const maxTermination = 4096

// failLoudly tells of f where the controller looks: once (no retry: the
// sidecar is ending) the Failed condition on the own Pod, and the
// termination message, which the kubelet puts in the container's status
// even when the Pod's status cannot be written.
func (r *runner) failLoudly(ctx context.Context, f *failure) {
	r.log.Error(f.err, "cannot go on: retrying cannot fix this", "reason", f.reason)
	msg := f.err.Error()
	if r.cfg.TerminationLog != "" {
		text := f.reason + ": " + msg
		if len(text) > maxTermination {
			text = text[:maxTermination]
		}
		if err := os.WriteFile(r.cfg.TerminationLog, []byte(text), 0o644); err != nil {
			r.log.Info("writing the termination message failed", "err", err.Error())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if len(msg) > maxTermination {
		msg = msg[:maxTermination]
	}
	body, n := r.rep.body([]desired{protocol.FailedCondition(f.reason, msg)})
	if n == 0 {
		return
	}
	if err := r.rep.write(wctx, body); err != nil {
		r.log.Info("writing the Failed condition failed", "err", err.Error())
	}
}
