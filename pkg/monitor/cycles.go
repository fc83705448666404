package monitor

import "strconv"

// DetectorCycles names cycles, a pattern detector,
// in reports, conditions and metrics (docs/design.md#cycles).
const DetectorCycles = "cycles"

// Cycle periods (docs/design.md#cycles): A B A B is 2, up to 5 signatures.
const (
	minCycle = 2
	maxCycle = 5
)

// cycles trips runaway when the last p x R tool calls are one sequence of
// p signatures (2 <= p <= 5, not all the same) repeated R = cycleRepeats
// times in a row: A B A B A B A B for p = 2, R = 4. The fold keeps the count
// (cycleTrack); restated parts and the worldTools reset behave as for
// identical calls.
func cycles(s *State) (reason, message string, failed bool) {
	r := s.Guards.CycleRepeats
	if r == 0 || s.Cycle < r {
		return "", "", false
	}
	return DetectorCycles, "repeated a cycle of " + strconv.Itoa(s.CyclePeriod) + " tool calls " + strconv.Itoa(r) + " times", true
}

// cycleTrack holds the last maxCycle signatures and, per period p, how many
// calls in a row equalled the call p before them: the last Run[p] + p calls
// then have period p, so they hold (Run[p] + p) / p copies. Its size is
// fixed however long the turn runs. From is the index of the first call
// that counts (an answer-aware restart moves it): a call before it is never
// part of a cycle. Fields are exported for the checkpoint.
type cycleTrack struct {
	Sig  [maxCycle]uint64
	N    int
	Run  [maxCycle + 1]int
	From int
}

// push folds the signature of a call whose arguments are complete. A call
// only extends a run when the call p before it counts (is from From on).
func (c *cycleTrack) push(sig uint64) {
	for p := minCycle; p <= maxCycle; p++ {
		if c.N-p >= c.From && c.back(p) == sig {
			c.Run[p]++
		} else {
			c.Run[p] = 0
		}
	}
	c.Sig[c.N%maxCycle] = sig
	c.N++
}

// back is the signature p calls back (1 is the latest pushed).
func (c *cycleTrack) back(p int) uint64 { return c.Sig[(c.N-p)%maxCycle] }

// best returns the most copies in a row any period holds up to the last
// call (the smallest period on a tie), or 0 when none holds two.
func (c *cycleTrack) best() (copies, period int) {
	for p := minCycle; p <= maxCycle; p++ {
		n := (c.Run[p] + p) / p
		if n >= 2 && n > copies && !c.allSame(p) {
			copies, period = n, p
		}
	}
	return copies, period
}

// allSame reports whether the last p signatures are one: that is an
// identical-call streak, not a cycle.
func (c *cycleTrack) allSame(p int) bool {
	for i := 2; i <= p; i++ {
		if c.back(i) != c.back(1) {
			return false
		}
	}
	return true
}

// restart makes the count start at the call k calls back (1 = the latest):
// answer-aware identity says the world moved there. The calls before it
// are never part of a cycle again, not even for a later call (From).
func (c *cycleTrack) restart(k int) {
	for p := minCycle; p <= maxCycle; p++ {
		c.Run[p] = min(c.Run[p], max(0, k-p))
	}
	c.From = max(c.From, c.N-k)
}
