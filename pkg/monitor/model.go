package monitor

import "time"

// The model's side of a turn (docs/gateway.md): what the sidecar's model
// gateway read from the provider's own answer, which the agent's stdout
// may hide or misstate. The gateway (pkg/gateway) makes these; the engine
// folds them beside the stdout lines.

// Usage is one model message's token counts as the provider's answer gave
// them (Anthropic usage, OpenAI usage, Gemini usageMetadata), each kind
// counted once: Input excludes the cached tokens counted in CacheRead and
// CacheWrite.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead,omitempty"`
	CacheWrite int64 `json:"cacheWrite,omitempty"`
}

// ModelEvent is one thing the model streamed: a text or thinking delta, or
// the end of a model message with its model, usage and stop reason.
type ModelEvent struct {
	// Delta is a text delta, or a thinking delta when Thinking is set; nil
	// for a message end.
	Delta    []byte
	Thinking bool
	// End marks the end of one model message (one answer to one request):
	// Model, Usage and Stop are set.
	End bool
	// Model is the model that answered, as the provider named it (else as
	// the request named it).
	Model string
	Usage Usage
	// Stop is the message's stop reason, normalized (StopEnd, StopToolUse,
	// StopLength, StopError; "" when the answer carried none).
	Stop string
}

// FeedModel folds one model-side event beside the stdout lines (Feed): the
// sidecar calls both from one goroutine, in the order they arrive, so a
// message's model events come before the CLI prints it. It returns what the
// event produced, as Feed does.
func (e *Engine) FeedModel(ev ModelEvent, now time.Time) Verdicts {
	e.cur = Verdicts{}
	return e.cur
}
