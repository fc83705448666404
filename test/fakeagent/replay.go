package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"time"
)

// Clock is the time the replayer reads and sleeps on; tests inject a fake.
type Clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// Replay copies the lines of r to w, dropping each line's
// `kubectl logs --timestamps` prefix (an RFC 3339 time and a space) and
// keeping the gaps between the timestamps, divided by speed. Lines without
// a prefix are written at once. Gaps are kept against the start time, so
// sleeping late never accumulates drift.
func Replay(r io.Reader, w io.Writer, speed float64, clk Clock) (lines int, err error) {
	if speed <= 0 {
		return 0, errors.New("speed must be positive")
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var first time.Time
	var start time.Time
	for {
		line, rerr := br.ReadString('\n')
		if line == "" && rerr != nil {
			if rerr == io.EOF {
				return lines, nil
			}
			return lines, rerr
		}
		text := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if ts, rest, ok := cutTimestamp(text); ok {
			if first.IsZero() {
				first, start = ts, clk.Now()
			}
			due := start.Add(time.Duration(float64(ts.Sub(first)) / speed))
			if d := due.Sub(clk.Now()); d > 0 {
				clk.Sleep(d)
			}
			text = rest
		}
		if _, err := io.WriteString(w, text+"\n"); err != nil {
			return lines, err
		}
		lines++
		if rerr == io.EOF {
			return lines, nil
		}
	}
}

// cutTimestamp splits "2026-01-05T09:00:00.5Z {...}" into its time and the rest.
func cutTimestamp(line string) (time.Time, string, bool) {
	i := strings.IndexByte(line, ' ')
	if i < len("2006-01-02T15:04:05Z") || i > len(time.RFC3339Nano)+6 {
		return time.Time{}, line, false
	}
	ts, err := time.Parse(time.RFC3339Nano, line[:i])
	if err != nil {
		return time.Time{}, line, false
	}
	return ts, line[i+1:], true
}
