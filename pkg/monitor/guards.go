package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Guards are the detector knobs, named as in docs/design.md#thresholds-and-guards. A count of 0 switches
// its detector off; so does a zero duration, and an empty MaxCostUSD.
type Guards struct {
	// StepBudget is how many tool calls a turn may start; the next one trips
	// stepBudget (the 257th exceeds 256).
	StepBudget int `json:"stepBudget"`
	// IdenticalCalls is how many consecutive byte-identical tool calls trip
	// identicalCalls (the 4th of 4).
	IdenticalCalls int `json:"identicalCalls"`
	// SilentTurns is how many tool-only model messages may follow the last
	// one that spoke; the next one is nudged (the 13th after 12).
	SilentTurns int `json:"silentTurns"`
	// StallTimeout bounds the silence while the model is generating.
	StallTimeout Duration `json:"stallTimeout"`
	// ToolTimeout bounds the silence while a tool call is outstanding.
	ToolTimeout Duration `json:"toolTimeout"`
	// WhitespaceDeltas is how many consecutive whitespace-only text or
	// thinking deltas trip degeneration (the 128th).
	WhitespaceDeltas int `json:"whitespaceDeltas"`
	// WhitespaceBytes is how many bytes of such deltas trip degeneration (the
	// delta that brings the run to 8192).
	WhitespaceBytes int `json:"whitespaceBytes"`
	// WorldTools are tools whose answer means the world moved: a successful
	// answer resets the identical-call streak.
	WorldTools []string `json:"worldTools,omitempty"`
	// MaxCostUSD is the spend cap for the whole run, a decimal string
	// ("5.00"); empty means no cap.
	MaxCostUSD string `json:"maxCostUSD,omitempty"`
	// CycleRepeats is how many times in a row a sequence of 2 to 5 tool
	// call signatures (not all the same) may repeat: the last call of the
	// Rth copy trips cycles. 0 (the default) is off; else at least 2.
	CycleRepeats int `json:"cycleRepeats"`
	// ErrorRepeats is how many consecutive error answers with the same text
	// trip repeatedErrors (the 6th of 6).
	ErrorRepeats int `json:"errorRepeats"`
	// RepeatedTextBytes is how many bytes of text the model streams with a
	// period of 1 to 256 bytes trip repetition (the 4096th).
	RepeatedTextBytes int `json:"repeatedTextBytes"`
	// AnswerAware makes an answer that differs from the previous identical
	// call's answer restart the identical-call streak and the cycle count.
	AnswerAware bool `json:"answerAware"`
	// NudgeDelivery says where nudges go besides the humans' Event:
	// NudgeDeliveryNone ("" reads the same) or NudgeDeliveryFile (the
	// sidecar appends them to a file the agent's hook reads).
	NudgeDelivery string `json:"nudgeDelivery,omitempty"`
	// WarnFirst turns the first loop trip of a turn into a nudge, where
	// nudges are delivered to the agent (NudgeDelivery file): the agent is
	// told before it is stopped.
	WarnFirst bool `json:"warnFirst,omitempty"`
	// Refuse makes the agent's pre-tool hook refuse the call that trips a
	// stopping detector before the CLI runs it, where nudges are delivered
	// (NudgeDelivery file): the sidecar writes its verdict on every call it
	// judged, the hook waits for its call's at most RefuseWait (past it the
	// call runs) and refuses a tripping one with the trip's message.
	Refuse bool `json:"refuse"`
	// RefuseWait bounds the pre-tool hook's wait for the sidecar's verdict.
	RefuseWait Duration `json:"refuseWait"`
}

// MaxRefuseWait bounds refuseWait: the CLIs' own hook timeouts (claude 10s
// in the samples) must stay longer.
const MaxRefuseWait = 5 * time.Second

// Refuses says whether the pre-tool hook refuses tripping calls.
func (g Guards) Refuses() bool { return g.Delivers() && g.Refuse }

// Nudge delivery modes (guards.nudgeDelivery).
const (
	NudgeDeliveryNone = "none"
	NudgeDeliveryFile = "file"
)

// Delivers says whether nudges reach the agent itself.
func (g Guards) Delivers() bool { return g.NudgeDelivery == NudgeDeliveryFile }

// DefaultGuards returns the defaults, each written once in the detector
// table (detectors.go).
func DefaultGuards() Guards {
	var g Guards
	for _, gd := range allGuards {
		gd.setDefault(&g)
	}
	return g
}

// ParseGuards reads a JSON object holding any subset of the guard names and
// merges it over DefaultGuards. An unknown key or a bad value is an error
// that names the field. A JSON null leaves the default in place. It is the
// one guard validator: the engine, the manager's config and the chart's
// schema test all use it.
func ParseGuards(data []byte) (Guards, error) {
	g := DefaultGuards()
	if len(bytes.TrimSpace(data)) == 0 {
		return g, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return g, fmt.Errorf("guards: not a JSON object: %w", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error is deterministic
	for _, k := range keys {
		v := raw[k]
		if string(v) == "null" {
			continue
		}
		if err := g.set(k, v); err != nil {
			return g, &GuardError{Guard: k, Err: err}
		}
	}
	return g, g.Validate()
}

func (g *Guards) set(key string, v json.RawMessage) error {
	for _, gd := range allGuards {
		if gd.Name == key {
			return gd.set(g, v)
		}
	}
	return fmt.Errorf("unknown guard (known: %s)", strings.Join(GuardNames(), ", "))
}

// GuardError is a guard refused by ParseGuards or Validate, by name.
type GuardError struct {
	Guard string // the guard's JSON name, or a key that names none
	Err   error
}

func (e *GuardError) Error() string { return "guards: " + e.Guard + ": " + e.Err.Error() }

func (e *GuardError) Unwrap() error { return e.Err }

// GuardNames lists every guard's name, in table order.
func GuardNames() []string {
	names := make([]string, len(allGuards))
	for i, gd := range allGuards {
		names[i] = gd.Name
	}
	return names
}

// Validate reports the first guard with a value out of range, by name.
func (g Guards) Validate() error {
	for _, gd := range allGuards {
		if err := gd.validate(g); err != nil {
			return &GuardError{Guard: gd.Name, Err: err}
		}
	}
	return nil
}

// maxCost returns the spend cap; ok is false when there is none.
func (g Guards) maxCost() (capOK Money, err error) {
	if g.MaxCostUSD == "" {
		return -1, nil
	}
	m, err := ParseMoney(g.MaxCostUSD)
	if err != nil || m < 0 {
		return -1, fmt.Errorf("guards: maxCostUSD: %w", errCost(g.MaxCostUSD))
	}
	return m, nil
}

// Duration is a time.Duration whose JSON form is Go syntax ("90s", "10m").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders Go syntax.
func (d Duration) String() string { return time.Duration(d).String() }

// Short renders Go syntax the way people write it: "10m", not "10m0s"; "2h",
// not "2h0m0s". The manager's defaults and the chart's values use it.
func (d Duration) Short() string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// MarshalJSON renders a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Go duration string ("90s", "10m", "0").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("must be a duration string like \"10m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("must be a non-negative duration like \"10m\", got %q", s)
	}
	*d = Duration(v)
	return nil
}
