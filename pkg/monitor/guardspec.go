package monitor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// GuardKind is the shape of a guard's value, which says how it is parsed,
// validated, written in the API and the chart, and calibrated.
type GuardKind uint8

const (
	GuardCount    GuardKind = iota + 1 // a non-negative integer; 0 is off
	GuardDuration                      // a non-negative Go duration string ("10m"); 0 is off
	GuardBool                          // true or false
	GuardChoice                        // one of Choices
	GuardCost                          // a non-negative decimal string ("5.00"); "" is off
	GuardTools                         // a list of tool names
)

// Guard is one knob of Guards, as the JSON, the API, the chart and the
// manager's config name it. Each lives in the detector table (detectors.go)
// beside the detector that reads it, or among settingGuards.
type Guard struct {
	// Name is the guard's JSON name.
	Name string
	Kind GuardKind
	// Help is the guard's one line in the chart's values.yaml, which
	// `make chart-sync` writes from this table (hack/chartguards), and the
	// API fields' godoc and CRD descriptions (hack/apitables).
	Help string
	// Least is the least non-zero value of a count (0 reads as 1):
	// cycleRepeats is 0 (off) or at least 2.
	Least int
	// Most is the largest value of a duration (0: no bound).
	Most time.Duration
	// Choices are a GuardChoice's values.
	Choices []string
	// TripsAtLimit says a count trips when the counter reaches the guard
	// (identicalCalls: the 4th of 4) rather than when it exceeds it
	// (stepBudget: the 257th of 256). Calibrate suggests past the largest
	// value seen for the first kind.
	TripsAtLimit bool
	// WholeTurn says calibrate measures the guard once, at the end of the
	// turn (steps, cost), rather than line by line.
	WholeTurn bool

	field func(g *Guards) any // the Guards field: *int, *Duration, *bool, *string or *[]string
	def   any                 // the default; nil for none (the zero value, and no cluster default)
	hook  bool                // read only by the agent's pre-tool hook, where nudges are delivered
	// measure is the value calibrate measures after one line (before is
	// the State before it); ok false when this line does not count for it.
	measure func(before, after *State) (v int64, ok bool)
}

// Default is the guard's default value (int, Duration, bool, string) and
// whether it has one (worldTools and maxCostUSD have none).
func (gd Guard) Default() (any, bool) { return gd.def, gd.def != nil }

// Value is the guard's value in g, as Default types it.
func (gd Guard) Value(g Guards) any {
	switch p := gd.field(&g).(type) {
	case *int:
		return *p
	case *Duration:
		return *p
	case *bool:
		return *p
	case *string:
		return *p
	case *[]string:
		return *p
	}
	panic("monitor: guard " + gd.Name + " has a field of no known kind")
}

// Measured says whether calibrate measures the guard.
func (gd Guard) Measured() bool { return gd.measure != nil }

// Measure is what calibrate reads of the guard after one line: the count,
// the silence or the cost the stream reached (before is the State before
// the line). ok is false when the guard is not measured, or not on this
// line.
func (gd Guard) Measure(before, after *State) (v int64, ok bool) {
	if gd.measure == nil {
		return 0, false
	}
	return gd.measure(before, after)
}

func (gd Guard) setDefault(g *Guards) {
	switch p := gd.field(g).(type) {
	case *int:
		if d, ok := gd.def.(int); ok {
			*p = d
		}
	case *Duration:
		if d, ok := gd.def.(Duration); ok {
			*p = d
		}
	case *bool:
		if d, ok := gd.def.(bool); ok {
			*p = d
		}
	case *string:
		if d, ok := gd.def.(string); ok {
			*p = d
		}
	}
}

// set parses one JSON value into the guard's field, refusing a value of the
// wrong shape.
func (gd Guard) set(g *Guards, v json.RawMessage) error {
	switch p := gd.field(g).(type) {
	case *int:
		return setCount(p, v)
	case *Duration:
		return json.Unmarshal(v, p)
	case *bool:
		if err := json.Unmarshal(v, p); err != nil {
			return fmt.Errorf("must be true or false, got %s", v)
		}
		return nil
	case *[]string:
		var tools []string
		if err := json.Unmarshal(v, &tools); err != nil {
			return fmt.Errorf("must be a list of tool names")
		}
		*p = tools
		return nil
	case *string:
		var s string
		err := json.Unmarshal(v, &s)
		if gd.Kind == GuardChoice {
			if err != nil || !gd.chosen(s) {
				return fmt.Errorf("must be %s, got %s", gd.choiceList(), v)
			}
		} else if err != nil {
			return fmt.Errorf("must be a decimal string like \"5.00\"")
		}
		*p = s
		return nil
	}
	return fmt.Errorf("no parser")
}

// validate checks the guard's value in g against its range.
func (gd Guard) validate(g Guards) error {
	switch v := gd.Value(g).(type) {
	case int:
		if v < 0 {
			return fmt.Errorf("must be a non-negative integer")
		}
		if v > 0 && v < gd.Least {
			return fmt.Errorf("must be 0 (off) or at least %d", gd.Least)
		}
	case Duration:
		if gd.Most > 0 && (v < 0 || v.D() > gd.Most) {
			return fmt.Errorf("must be between 0s and %v", gd.Most)
		}
		if v < 0 {
			return fmt.Errorf("must not be negative")
		}
	case string:
		if gd.Kind == GuardChoice && v != "" && !gd.chosen(v) {
			return fmt.Errorf("must be %s, got %q", gd.choiceList(), v)
		}
		if gd.Kind == GuardCost && v != "" {
			if m, err := ParseMoney(v); err != nil || m < 0 {
				return errCost(v)
			}
		}
	}
	return nil
}

// isZero says whether the guard holds its zero value in g: nudgeDelivery ""
// reads as "none", and the hook's guards mean nothing while nudges are not
// delivered.
func (gd Guard) isZero(g Guards) bool {
	switch v := gd.Value(g).(type) {
	case []string:
		return v == nil
	case string:
		return v == "" || (gd.Kind == GuardChoice && v == gd.Choices[0])
	case int:
		return v == 0
	case Duration:
		return v == 0
	case bool:
		return !v
	}
	return false
}

func (gd Guard) chosen(s string) bool { return slices.Contains(gd.Choices, s) }

// choiceList writes the choices for a message: "none" or "file".
func (gd Guard) choiceList() string {
	q := make([]string, len(gd.Choices))
	for i, c := range gd.Choices {
		q[i] = fmt.Sprintf("%q", c)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func errCost(s string) error {
	return fmt.Errorf("must be a non-negative decimal string like \"5.00\", got %q", s)
}

func setCount(dst *int, v json.RawMessage) error {
	var n int
	if err := json.Unmarshal(v, &n); err != nil || n < 0 {
		return fmt.Errorf("must be a non-negative integer, got %s", v)
	}
	*dst = n
	return nil
}
