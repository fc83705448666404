package monitor

import (
	"fmt"
	"strings"
)

// WouldTrip is what an audited detector would have stopped in the turn
// (docs/policies.md#audit): its first would-trip's class, message, line and
// step, and how many times it would have tripped.
type WouldTrip struct {
	Class    string `json:"class"`
	Detector string `json:"detector"`
	Message  string `json:"message"`
	// Line is the 1-based input line of the first would-trip.
	Line int `json:"line"`
	// Step is the turn's tool calls at the first would-trip.
	Step int `json:"step"`
	// Count is how many times the detector would have tripped.
	Count int `json:"count"`
}

// detectorBits is a set of detectors by their index in detectorTable.
type detectorBits uint32

// A table of more than 32 detectors does not compile: detectorBits needs
// a wider type then.
var _ [32 - len(detectorTable)]struct{}

func bitOf(i int) detectorBits { return 1 << uint(i) }

// auditBits reads Options.Audit: the detectors whose trips only record.
// An unknown name is an error that names every unknown one.
func auditBits(names []string) (detectorBits, error) {
	var set detectorBits
	var unknown []string
	for _, n := range names {
		i := detectorIndex(n)
		if i < 0 {
			unknown = append(unknown, fmt.Sprintf("%q", n))
			continue
		}
		set |= bitOf(i)
	}
	if len(unknown) > 0 {
		return 0, fmt.Errorf("audit: unknown detector %s (known: %s)", strings.Join(unknown, ", "), strings.Join(DetectorNames(), ", "))
	}
	return set, nil
}

// DetectorNames are the detectors' names, in chain order.
func DetectorNames() []string {
	out := make([]string, len(detectorTable))
	for i, d := range detectorTable {
		out[i] = d.Name
	}
	return out
}

func detectorIndex(name string) int {
	for i := range detectorTable {
		if detectorTable[i].Name == name {
			return i
		}
	}
	return -1
}

// wouldTrip records an audited detector's trip and lets the turn go on:
// the detector's count starts over (its again, else the reset warnFirst
// uses), or, for a detector whose count cannot start over (a whole-turn
// bound, the end of input), it records once and is not judged again this
// turn.
func (e *Engine) wouldTrip(l *link, detector, message string, line int) {
	d := &detectorTable[l.d]
	switch {
	case d.again != nil:
		d.again(e)
	case d.reset != nil:
		d.reset(e)
	default:
		e.f.Recorded |= l.bit
	}
	e.wouldCount++
	for i := range e.f.Would {
		if w := &e.f.Would[i]; w.Detector == detector {
			w.Count++
			return
		}
	}
	e.f.Would = append(e.f.Would, WouldTrip{Class: d.Class, Detector: detector, Message: message, Line: line, Step: e.st.Steps, Count: 1})
}

// WouldTrips are the turn's would-trips so far, one per audited detector
// that would have tripped, in the order of their first.
func (e *Engine) WouldTrips() []WouldTrip { return append([]WouldTrip(nil), e.f.Would...) }

// WouldTripCount is how many would-trips the turn had so far, all
// detectors together: a caller that sees it move reads WouldTrips. It
// costs nothing per line.
func (e *Engine) WouldTripCount() int { return e.wouldCount }

// ValidateAudit says which of names is no detector (New refuses them too).
func ValidateAudit(names []string) error {
	_, err := auditBits(names)
	return err
}
