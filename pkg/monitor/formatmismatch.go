package monitor

import (
	"encoding/json"
	"strconv"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// A stream that does not read as its format (docs/design.md#format-mismatch):
// a wrong spec.format reads a looping claude stream as no steps, no cost
// and no trips. So the engine judges its own reading: when most lines do
// not parse (more than half, judged from the formatSample-th line on, and
// at the end of a shorter stream that another format would read), the
// turn notes FormatMismatch, naming the format the unparsed lines read as;
// when they read as no format, only if no line parsed at all (a CLI's
// stderr beside events that parse is noise, not a mismatch).
// A stream of the right format parses nearly every line: the recorded
// streams of every CLI parse all of theirs.

// formatSample is how many lines the engine reads before it judges that a
// stream does not read as its format.
const formatSample = 20

// fitSample is how many unparsed lines are sniffed for the format they
// read as: enough to name it, few enough that a flood of garbage costs
// nothing more than its counting. A line over fitLineMax is not sniffed
// (an event is rarely that long, and a canonical copy of it would be).
const (
	fitSample  = 64
	fitLineMax = 1 << 20
)

// formatFit counts, per format of formats, the unparsed lines that are an
// event of that format alone.
type formatFit struct {
	Counts  [len(formats)]int
	Sniffed int
}

// count sniffs an unparsed line, while the sample lasts.
func (f *formatFit) count(line []byte) {
	if f.Sniffed >= fitSample {
		return
	}
	f.Sniffed++
	if len(line) > fitLineMax || !json.Valid(line) {
		return
	}
	if i := sniffIndex(line); i >= 0 {
		f.Counts[i]++
	}
}

// best is the format most unparsed lines read as, "" when none reads any.
func (f *formatFit) best() string {
	top := -1
	for i, n := range f.Counts {
		if n > 0 && (top < 0 || n > f.Counts[top]) {
			top = i
		}
	}
	if top < 0 {
		return ""
	}
	return formats[top].name
}

// judgeFormat notes, once, that the stream does not read as its format.
func (e *Engine) judgeFormat(atEnd bool) {
	judged := e.f.Parsed + e.f.Unparsed
	if e.f.FormatNote != "" || e.f.Unparsed*2 <= judged {
		return
	}
	fit := e.f.Fit.best()
	if judged < formatSample && (!atEnd || fit == "") {
		return
	}
	if fit == "" && e.f.Parsed > 0 {
		// Events of the format parse, and the rest reads as no format:
		// noise beside the stream (a CLI's stderr in its container log,
		// Gemini CLI's error trace), counted unparsed, not a mismatch.
		return
	}
	e.f.FormatNote, e.f.FormatFits = formatMismatchText(e.f.Active, e.f.Unparsed, judged, fit), fit
}

// formatMismatchText says which format the lines did not read as, and
// which one they would.
func formatMismatchText(active string, unparsed, judged int, fit string) string {
	as := "format " + active
	if active == "" {
		as = "any format (auto)"
	}
	s := strconv.Itoa(unparsed) + " of " + strconv.Itoa(judged) + " lines do not read as " + as
	if fit == "" {
		return s + ", nor as any format turnwatch reads"
	}
	return s + "; they read as " + fit + ": set spec.format to " + fit + " (or auto)"
}

// FormatMismatch is the note that the stream does not read as its format
// (Report.FormatMismatch); "" while it does.
func (e *Engine) FormatMismatch() string { return e.f.FormatNote }

// sniffIndex is the index in formats of the one format whose event
// line is, or -1 when no format or more than one claims it. A line whose
// keys or type spell ASCII with escapes is sniffed canonical.
func sniffIndex(line []byte) int {
	typ := topString(line, "type")
	if typ == nil {
		if jsonscan.NeedsCanon(line) {
			return sniffIndexOnce(jsonscan.Canonicalize(nil, line))
		}
		return -1
	}
	if i := sniffIndexOnce(line); i >= 0 || !jsonscan.NeedsCanon(line) {
		return i
	}
	return sniffIndexOnce(jsonscan.Canonicalize(nil, line))
}

func sniffIndexOnce(line []byte) int {
	typ := topString(line, "type")
	if typ == nil {
		return -1
	}
	t := string(typ)
	found := -1
	for i := range formats {
		if !formats[i].sniff(t, line) {
			continue
		}
		if found >= 0 {
			return -1 // two formats claim it: it decides nothing
		}
		found = i
	}
	return found
}

// rethink is auto changing its mind: when the format it decided on read
// nothing after its deciding line (a leading line that looked like another
// CLI's), and this line, which that format does not read, is an event of
// exactly one other format, the engine starts over and decides again on
// this line; the deciding line counts as unparsed. Only while nothing was
// told from the wrong reading (a trip, a nudge, a would-trip).
func (e *Engine) rethink(line []byte) bool {
	if e.format != FormatAuto || e.f.Active == "" || e.f.AutoLines != 1 ||
		len(e.f.Trips) > 0 || len(e.f.Nudges) > 0 || len(e.f.Would) > 0 || !json.Valid(line) {
		return false
	}
	i := sniffIndex(line)
	if i < 0 || formats[i].name == e.f.Active {
		return false
	}
	e.restart()
	e.ev = event{}
	return e.parseLine(line)
}

// restart forgets everything the fold folded, keeping what New derived
// from Options, the line counts, the clock and the notes (they may have
// been told): the deciding line of a wrong reading counts as unparsed.
// What it cost stays counted, as a closed session's: a turn's cost never
// goes down, and a report of it may have gone out.
func (e *Engine) restart() {
	fresh, _ := New(e.opts) // the options were read once already
	fresh.f.Lines, fresh.f.Unparsed, fresh.f.Ignored, fresh.f.Parsed = e.f.Lines, e.f.Unparsed+1, e.f.Ignored, e.f.Parsed-1
	if e.f.AutoIgnored {
		fresh.f.Ignored--
	}
	fresh.f.Fit, fresh.f.FormatNote, fresh.f.FormatFits, fresh.f.CostNote = e.f.Fit, e.f.FormatNote, e.f.FormatFits, e.f.CostNote
	fresh.f.LastTime, fresh.canon, fresh.cur = e.f.LastTime, e.canon, e.cur
	fresh.f.Closed, fresh.f.Stream, fresh.st.Cost = e.streamCost(), e.f.Stream, e.st.Cost
	fresh.f.Metered, fresh.f.ModelStop, fresh.f.ModelDeltas = e.f.Metered, e.f.ModelStop, e.f.ModelDeltas // the model's, not the reading's
	*e = *fresh
}
