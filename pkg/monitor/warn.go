package monitor

import "strings"

// IsLoopDetector says whether warnFirst applies to the detector: one whose
// row in the detector table has a reset, which empties its count once the
// agent was warned (the next matching call counts 1).
func IsLoopDetector(detector string) bool {
	d := detectorNamed(detector)
	return d != nil && d.Loop()
}

// warn turns the turn's first loop trip into a nudge where nudges reach the
// agent (docs/nudges.md#guards): the agent is told the
// loop's own message and asked to change course, that detector's count
// starts over, and the next loop trip of the turn trips. One warning per
// turn: a turn reopened by a start event is the same turn.
func (e *Engine) warn(detector, message string, line int) bool {
	g := &e.st.Guards
	if !IsLoopDetector(detector) || !g.WarnFirst || !g.Delivers() || e.st.Warned {
		return false
	}
	e.st.Warned = true
	detectorNamed(detector).reset(e)
	n := Nudge{Detector: detector, Message: WarningText(message), Line: line}
	e.f.Nudges = append(e.f.Nudges, n)
	e.cur.Nudges = append(e.cur.Nudges, n)
	return true
}

// WarningText is what the agent reads when warnFirst stopped a loop trip:
// the detector's own legible message and what to do next.
func WarningText(message string) string {
	lead := "you got " // "the same tool error 6 times in a row"
	if strings.HasPrefix(message, "repeated ") {
		lead = "you have "
	}
	return lead + message + "; change course or report what blocks you (the next loop stops this turn)"
}

// NudgeCount is how many nudges the turn has said so far (restored with a
// checkpoint): the sidecar numbers the nudges it delivers from it.
func (e *Engine) NudgeCount() int { return len(e.f.Nudges) }
