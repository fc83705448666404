package explain

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"turnwatch.dev/turnwatch/pkg/quote"
)

// ANSI styles, used only when the output is a terminal.
const (
	styleReset  = "\x1b[0m"
	styleBold   = "\x1b[1m"
	styleDim    = "\x1b[2m"
	styleRed    = "\x1b[31m"
	styleYellow = "\x1b[33m"
	styleCyan   = "\x1b[36m"
)

// painter styles text when colour is on.
type painter bool

func (p painter) s(style, text string) string {
	if !p || text == "" {
		return text
	}
	return style + text + styleReset
}

// IsTerminal reports whether f is a terminal and colour is welcome there
// (NO_COLOR unset, TERM not "dumb").
func IsTerminal(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// WriteText writes the timeline for a person: a summary, the trip, then one
// line per entry. Entries of the streak that tripped are marked with ">>".
// Every text the agent's stream carries (tool names, arguments, errors,
// messages) is escaped (quote.Text): a row is only ever turnwatch's.
func (t *Timeline) WriteText(w io.Writer, color bool) error {
	p := painter(color)
	r := t.Report
	var b strings.Builder
	fmt.Fprintf(&b, "stream: %s, %d lines, %d steps, cost %s USD", r.Format, r.Lines, r.Steps, r.CostUSD)
	if r.StopReason != "" {
		fmt.Fprintf(&b, ", stop %s", r.StopReason)
	}
	if r.Result {
		b.WriteString(", final result")
	} else {
		b.WriteString(", no final result")
	}
	if r.Unparsed > 0 {
		fmt.Fprintf(&b, ", %d lines unparsed", r.Unparsed)
	}
	b.WriteString("\n")
	if r.ResultError != "" {
		fmt.Fprintf(&b, "%s %s\n", p.s(styleRed, "the agent reported an error:"), quote.Text(r.ResultError))
	}
	for _, tr := range r.Trips {
		fmt.Fprintf(&b, "%s %s (%s) at line %d: %s\n", p.s(styleBold+styleRed, "TRIPPED"), tr.Detector, tr.Class, tr.Line, quote.Text(tr.Message))
	}
	for _, n := range r.Nudges {
		fmt.Fprintf(&b, "%s %s at line %d: %s\n", p.s(styleYellow, "nudged"), n.Detector, n.Line, quote.Text(n.Message))
	}
	for _, x := range r.WouldTrips {
		fmt.Fprintf(&b, "%s %s (%s, audited) first at line %d, %d times: %s\n", p.s(styleYellow, "would trip"), x.Detector, x.Class, x.Line, x.Count, quote.Text(x.Message))
	}
	if len(t.Entries) == 0 {
		b.WriteString("(no tool calls, gaps or verdicts in the stream)\n")
	} else {
		fmt.Fprintf(&b, "\n%s\n", p.s(styleDim, "      line      time  what                                                              steps  cost USD  silent"))
	}
	for _, e := range t.Entries {
		writeEntry(&b, e, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEntry writes one entry: a line per call, error, gap or verdict.
func writeEntry(b *strings.Builder, e Entry, p painter) {
	mark := "  "
	if e.InTrip {
		mark = p.s(styleBold+styleRed, ">>")
	}
	at := ""
	if e.Time != "" {
		at = "+" + (time.Duration(e.AtSeconds * float64(time.Second))).Round(10*time.Millisecond).String()
	}
	counters := fmt.Sprintf("%5d  %8s  %6s", e.Steps, e.CostUSD, silent(e.Silent))
	row := func(what string, withCounters bool) {
		c := ""
		if withCounters {
			c = "  " + p.s(styleDim, counters)
		}
		fmt.Fprintf(b, "%s %6d %9s  %s%s\n", mark, e.Line, at, pad(what, 64), c)
	}
	if e.GapSeconds > 0 {
		row(p.s(styleYellow, fmt.Sprintf("… %s of silence", time.Duration(e.GapSeconds*float64(time.Second)).Round(time.Second))), false)
	}
	if e.Whitespace != nil {
		row(fmt.Sprintf("%d whitespace-only deltas (%d bytes) since line %d", e.Whitespace.Deltas, e.Whitespace.Bytes, e.Whitespace.FromLine), true)
	}
	for i, c := range e.Calls {
		what := fmt.Sprintf("%s %s %s", p.s(styleCyan, fmt.Sprintf("#%d", c.Step)), p.s(styleBold, quote.Text(c.Name)), quote.Text(c.Args))
		if e.Streak > 1 && i == len(e.Calls)-1 {
			what += p.s(styleYellow, fmt.Sprintf("  (identical x%d)", e.Streak))
		}
		row(what, i == len(e.Calls)-1)
	}
	for _, a := range e.Errors {
		what := p.s(styleRed, "✗ error answer")
		if a.Step > 0 {
			what += fmt.Sprintf(" to #%d", a.Step)
		}
		if a.Name != "" {
			what += " " + quote.Text(a.Name)
		}
		row(what, false)
	}
	if e.Result {
		what := "final result"
		if e.ResultErr != "" {
			what += p.s(styleRed, ": error: "+quote.Text(e.ResultErr))
		}
		row(what, true)
	}
	if e.Nudge != "" {
		row(p.s(styleYellow, "nudge: "+quote.Text(e.Nudge)), false)
	}
	if e.Trip != nil {
		row(p.s(styleBold+styleRed, fmt.Sprintf("TRIPPED %s (%s): %s", e.Trip.Detector, e.Trip.Class, quote.Text(e.Trip.Message))), true)
	}
}

func silent(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// pad pads s to width visible characters (ANSI styles do not count).
func pad(s string, width int) string {
	n := visibleLen(s)
	if n >= width {
		return s
	}
	return s + strings.Repeat(" ", width-n)
}

func visibleLen(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r == 'm' {
				esc = false
			}
		case r == '\x1b':
			esc = true
		default:
			n++
		}
	}
	return n
}
