package monitor

import (
	"io"
	"time"
)

// Fed is one line of a stream as Loop fed it to the engine.
type Fed struct {
	// Line is the line without its newline; for a line over the reader's
	// bound, only its head (LineReader.Next).
	Line []byte
	// Skipped says the line was over the bound: it counted as one unparsed
	// line, and its head moved the clock.
	Skipped bool
	// Verdicts is what the line produced.
	Verdicts
}

// Loop is the one loop that reads an agent's stream line by line and feeds
// an engine: replay, calibrate, watch, explain and ReadTail run it. The
// sidecar follows a live log with its own resumable reader (sidecar/
// follow.go) and feeds its lines by the same rule (sidecar/run_loop.go): a
// line over the bound is one unparsed line whose head still moves the
// clock (Engine.FeedSkipped), so line numbers agree everywhere.
type Loop struct {
	// Clock is the time of a line that carries no `kubectl logs
	// --timestamps` prefix; nil means such a line carries no clock (a
	// recorded stream).
	Clock func() time.Time
	// Before, when set, is called before each line is fed (watch takes its
	// lock there, explain reads the counters before the line).
	Before func()
	// After, when set, is called with each line once it was fed.
	After func(Fed)
}

// Run feeds e every line lr reads, to the end of the input. It returns the
// read error that ended it (not io.EOF); it does not Finish the engine.
func (lp Loop) Run(e *Engine, lr *LineReader) error {
	for {
		line, ok := lr.Next()
		if !ok {
			return lr.Err()
		}
		if lp.Before != nil {
			lp.Before()
		}
		var now time.Time
		if lp.Clock != nil {
			now = lp.Clock()
		}
		f := Fed{Line: line, Skipped: lr.Skipped()}
		if f.Skipped {
			f.Verdicts = e.FeedSkipped(line, now)
		} else {
			f.Verdicts = e.Feed(line, now)
		}
		if lp.After != nil {
			lp.After(f)
		}
	}
}

// Replay runs the engine over a whole recorded stream as production would
// (the replay command, calibrate's verdicts, ReadTail): lines of at most
// maxLine bytes (DefaultMaxLine when <= 0), no clock but the lines' own
// kubectl prefix, the end of input judged (Finish). Evaluation ends at the
// first trip that stops the turn; later lines are still counted.
func Replay(e *Engine, r io.Reader, maxLine int) (Report, error) {
	if err := (Loop{}).Run(e, NewLineReader(r, maxLine)); err != nil {
		return e.Report(), err
	}
	e.Finish()
	return e.Report(), nil
}
