package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A policy's limits (docs/policies.md#limits) cap a count, a duration or a
// cost; a bool, a choice or a list cannot be limited. The manager caps a
// run's turn when it resolves its guards; the sidecar of an attached Pod
// (docs/attach.md) caps the Pod's own guards annotation with the same rule,
// from the limits its namespace's ConfigMap handed it.

// OverLimit says whether value v asks more than limit lim, both JSON values
// of a guard of kind. For a count or a duration 0 (off) is more than any
// other; an unset value (null) is more than any limit. A limit that cannot
// be read holds nothing; a value that cannot be read is over any limit that
// can.
func OverLimit(kind GuardKind, v, lim json.RawMessage) bool {
	l, lOff, err := guardAmount(kind, lim)
	if err != nil || lOff {
		return false
	}
	n, off, err := guardAmount(kind, v)
	return err != nil || off || n > l
}

// guardAmount reads a count, a duration or a cost as one number, and
// whether it is unbounded (a count or duration of 0, an unset value).
func guardAmount(kind GuardKind, raw json.RawMessage) (n int64, unbounded bool, err error) {
	if string(raw) == "null" {
		return 0, true, nil
	}
	var s string
	switch kind {
	case GuardCount:
		err = json.Unmarshal(raw, &n)
		return n, n == 0, err
	case GuardDuration:
		if err = json.Unmarshal(raw, &s); err != nil {
			return 0, false, err
		}
		d, err := time.ParseDuration(s)
		return int64(d), d == 0, err
	case GuardCost:
		if err = json.Unmarshal(raw, &s); err != nil {
			return 0, false, err
		}
		if strings.TrimSpace(s) == "" {
			return 0, true, nil
		}
		m, err := ParseMoney(s)
		return int64(m), false, err
	}
	return 0, false, fmt.Errorf("a guard of kind %d has no limit", kind)
}

// OverrideGuards is guards (a JSON object) with each guard of override (a
// JSON object, the Pod's turnwatch.dev/guards annotation) over it, and each
// value over its limit in limits (a JSON object of guard names to limits)
// capped to it. It returns the guards capped, by name. An override that is
// not a JSON object of known guards is an error, and guards stand as they
// were: the namespace's guards hold.
func OverrideGuards(guards, override, limits []byte) ([]byte, []string, error) {
	base, err := guardObject(guards)
	if err != nil {
		return guards, nil, err
	}
	over, err := guardObject(override)
	if err != nil {
		return guards, nil, fmt.Errorf("the guards annotation: %w", err)
	}
	if _, err := ParseGuards(override); err != nil {
		return guards, nil, fmt.Errorf("the guards annotation: %w", err)
	}
	for k, v := range over {
		base[k] = v
	}
	lims, err := guardObject(limits)
	if err != nil {
		return guards, nil, fmt.Errorf("the limits: %w", err)
	}
	var capped []string
	for _, gd := range allGuards {
		lim, ok := lims[gd.Name]
		if !ok {
			continue
		}
		v, set := base[gd.Name]
		if !set {
			v = json.RawMessage("null")
		}
		if OverLimit(gd.Kind, v, lim) {
			base[gd.Name], capped = lim, append(capped, gd.Name)
		}
	}
	out, err := json.Marshal(base)
	return out, capped, err
}

// guardObject reads a JSON object of guards; empty reads as none.
func guardObject(b []byte) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if len(strings.TrimSpace(string(b))) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, errors.New("not a JSON object of guards")
	}
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	return out, nil
}
