package main

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
)

// padLineMax bounds one padding line, well under the runtime's 16 KiB split
// of a log line, so every padding line is one log line.
const padLineMax = 4000

// padHead and padTail wrap a padding line: a pi "session" event, which the
// engine parses and skips, so padding changes no step, cost, trip or nudge,
// only the line count and the bytes of the log.
const (
	padHead = `{"type":"session","padding":"`
	padTail = `"}`
)

// padded returns r with n bytes of padding lines after each line, each
// padding line carrying the timestamp prefix of the line before it: played,
// the padding costs no time; replayed, it is the same stream the agent
// printed. It makes a scenario several MiB long, so the kubelet rotates the
// agent's log mid-run (test/e2e TestSidecarKilledAfterRotation).
func padded(r io.Reader, n int) io.Reader {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(pad(r, pw, n)) }()
	return pr
}

func pad(r io.Reader, w io.Writer, n int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	seq := 0
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if _, werr := io.WriteString(bw, strings.TrimSuffix(line, "\n")+"\n"); werr != nil {
				return werr
			}
			prefix := ""
			if _, _, ok := cutTimestamp(strings.TrimSuffix(line, "\n")); ok {
				prefix = line[:strings.IndexByte(line, ' ')+1]
			}
			for left := n; left > 0; {
				size := min(left, padLineMax)
				seq++
				if _, werr := io.WriteString(bw, prefix+padLine(seq, size)+"\n"); werr != nil {
					return werr
				}
				left -= size
			}
			// Flush per input line, so a played line is never held back
			// behind a sleep.
			if ferr := bw.Flush(); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// padLine is one padding line of about size bytes; its number makes every
// line distinct, so no detector of repetition can see it even if one read it.
func padLine(seq, size int) string {
	num := strconv.Itoa(seq)
	fill := max(size-len(padHead)-len(padTail)-len(num)-1, 1)
	return padHead + num + "-" + strings.Repeat("x", fill) + padTail
}
