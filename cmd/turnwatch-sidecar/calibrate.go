package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func init() {
	commands["calibrate"] = command{
		summary: "measure healthy recorded streams and suggest guards none of them would trip",
		run:     runCalibrate,
	}
}

// calibrateMargin is the margin over the largest value seen (docs/calibrate.md).
const calibrateMargin = 1.5

// streamExts are the files a folder argument contributes (a file named on
// the command line is read whatever its name).
var streamExts = []string{".jsonl", ".ndjson", ".json", ".log"}

// Measure is one guard's largest value over the streams, and where.
type Measure struct {
	Guard   string `json:"guard"`
	Today   string `json:"today"`   // the guard's value in force ("0" or "" is off)
	Largest string `json:"largest"` // the largest value any stream reached
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"` // the line that reached it (0: the whole file)
	// Suggested is the guard's suggested value: at least calibrateMargin
	// times the largest value (past it, for the counts that trip when
	// reached), and never below today's value unless today's is off.
	Suggested string `json:"suggested"`
}

// FileVerdict is what today's guards say of one stream.
type FileVerdict struct {
	File   string          `json:"file"`
	Format string          `json:"format"`
	Trips  []monitor.Trip  `json:"trips"`
	Nudges []monitor.Nudge `json:"nudges"`
}

// Calibration is calibrate's --json output.
type Calibration struct {
	Files    int           `json:"files"`
	Measures []Measure     `json:"measures"`
	Trips    []FileVerdict `json:"wouldTrip"` // streams today's guards trip or nudge
	// Suggested is a guards object: valid as --guards and as the chart's
	// guards values.
	Suggested map[string]any `json:"suggested"`
}

// runCalibrate: calibrate [--format FORMAT] [--guards FILE] [--json] PATH...
func runCalibrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var ef engineFlags
	ef.register(fset)
	asJSON := fset.Bool("json", false, "print JSON for tools instead of the table")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: turnwatch-sidecar calibrate [--format FORMAT] [--guards FILE] [--json] PATH...")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() == 0 {
		fset.Usage()
		return 2
	}
	opts, err := ef.options()
	if err != nil {
		fmt.Fprintln(stderr, "calibrate:", err)
		return 2
	}
	files, err := streamFiles(fset.Args())
	if err != nil {
		fmt.Fprintln(stderr, "calibrate:", err)
		return 1
	}
	c, err := calibrate(files, opts, ef.maxLine)
	if err != nil {
		fmt.Fprintln(stderr, "calibrate:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = c.writeTable(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "calibrate:", err)
		return 1
	}
	return 0
}

// streamFiles expands the paths: files as named, folders to the stream
// files under them, in a fixed order.
func streamFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && slices.Contains(streamExts, strings.ToLower(filepath.Ext(path))) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no stream files (%s) in %s", strings.Join(streamExts, " "), strings.Join(paths, " "))
	}
	return out, nil
}

// maxima are the largest values one stream (or all) reached.
type maxima struct {
	steps, streak, cycle, errors, silent, wsDeltas, wsBytes, repeat int
	genGap, toolGap                                                 time.Duration
	cost                                                            monitor.Money
	// where each was reached: line numbers (0: the whole file)
	at map[string]int
}

// measure replays one stream with every count and duration guard off and
// returns the largest value each counter reached.
func measure(in io.Reader, opts monitor.Options, maxLine int) (maxima, error) {
	g := opts.Guards
	off := monitor.Guards{WorldTools: g.WorldTools, AnswerAware: g.AnswerAware}
	if off.WorldTools == nil {
		off.WorldTools = []string{} // a zero Guards would mean the defaults
	}
	opts.Guards, opts.PriorCostUSD = off, ""
	eng, err := monitor.New(opts)
	if err != nil {
		return maxima{}, err
	}
	m := maxima{at: map[string]int{}}
	lr := monitor.NewLineReader(in, maxLine)
	n := 0
	for {
		line, ok := lr.Next()
		if !ok {
			break
		}
		n++
		outstanding := eng.State().Outstanding
		if lr.Skipped() {
			eng.FeedSkipped(line, time.Time{})
		} else {
			eng.Feed(line, time.Time{})
		}
		m.fold(eng.State(), outstanding, n)
	}
	if err := lr.Err(); err != nil {
		return maxima{}, err
	}
	eng.Finish()
	st := eng.State()
	m.steps, m.cost = st.Steps, st.Cost
	return m, nil
}

// fold keeps the largest of each counter after one line.
func (m *maxima) fold(st monitor.State, outstanding, line int) {
	up := func(name string, dst *int, v int) {
		if v > *dst {
			*dst, m.at[name] = v, line
		}
	}
	up("identicalCalls", &m.streak, st.Streak)
	up("cycleRepeats", &m.cycle, st.Cycle)
	up("errorRepeats", &m.errors, st.ErrorStreak)
	up("silentTurns", &m.silent, st.Silent)
	up("whitespaceDeltas", &m.wsDeltas, st.WhitespaceDeltas)
	up("whitespaceBytes", &m.wsBytes, st.WhitespaceBytes)
	up("repeatedTextBytes", &m.repeat, st.RepeatBytes)
	gap, name := &m.genGap, "stallTimeout"
	if outstanding > 0 {
		gap, name = &m.toolGap, "toolTimeout"
	}
	if st.Gap > *gap {
		*gap, m.at[name] = st.Gap, line
	}
}

// calibrate measures every file, replays it with today's guards, and
// suggests guards.
func calibrate(files []string, opts monitor.Options, maxLine int) (Calibration, error) {
	c := Calibration{Files: len(files), Trips: []FileVerdict{}}
	var all maxima
	where := map[string]string{}
	whereLine := map[string]int{}
	take := func(name, file string, line int, bigger bool) {
		if bigger {
			where[name], whereLine[name] = file, line
		}
	}
	for _, f := range files {
		m, err := measureFile(f, opts, maxLine)
		if err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		for _, x := range []struct {
			name     string
			dst, val *int
		}{{"stepBudget", &all.steps, &m.steps}, {"identicalCalls", &all.streak, &m.streak}, {"cycleRepeats", &all.cycle, &m.cycle},
			{"errorRepeats", &all.errors, &m.errors}, {"silentTurns", &all.silent, &m.silent}, {"whitespaceDeltas", &all.wsDeltas, &m.wsDeltas},
			{"whitespaceBytes", &all.wsBytes, &m.wsBytes}, {"repeatedTextBytes", &all.repeat, &m.repeat}} {
			take(x.name, f, m.at[x.name], *x.val > *x.dst)
			*x.dst = max(*x.dst, *x.val)
		}
		take("stallTimeout", f, m.at["stallTimeout"], m.genGap > all.genGap)
		all.genGap = max(all.genGap, m.genGap)
		take("toolTimeout", f, m.at["toolTimeout"], m.toolGap > all.toolGap)
		all.toolGap = max(all.toolGap, m.toolGap)
		take("maxCostUSD", f, 0, m.cost > all.cost)
		all.cost = max(all.cost, m.cost)

		v, err := verdictFile(f, opts, maxLine)
		if err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		if len(v.Trips) > 0 || len(v.Nudges) > 0 {
			c.Trips = append(c.Trips, v)
		}
	}
	c.Measures, c.Suggested = suggest(all, opts.Guards, where, whereLine)
	return c, nil
}

func measureFile(name string, opts monitor.Options, maxLine int) (maxima, error) {
	f, err := os.Open(name)
	if err != nil {
		return maxima{}, err
	}
	defer f.Close()
	return measure(f, opts, maxLine)
}

func verdictFile(name string, opts monitor.Options, maxLine int) (FileVerdict, error) {
	f, err := os.Open(name)
	if err != nil {
		return FileVerdict{}, err
	}
	defer f.Close()
	r, err := replay(f, opts, maxLine)
	if err != nil {
		return FileVerdict{}, err
	}
	return FileVerdict{File: name, Format: r.Format, Trips: r.Trips, Nudges: r.Nudges}, nil
}

// suggest turns the maxima into the table's rows and a guards object.
// A count that trips when reached (identicalCalls, ...) must be past the
// largest value; one that trips when exceeded (stepBudget, silentTurns)
// may equal it. Either way the suggestion is at least 1.5 times the
// largest value, and not below today's value unless today's is off. A
// guard that is off stays off unless the streams show some of it.
func suggest(m maxima, today monitor.Guards, where map[string]string, whereLine map[string]int) ([]Measure, map[string]any) {
	sug := map[string]any{"worldTools": append([]string{}, today.WorldTools...), "answerAware": today.AnswerAware}
	var rows []Measure
	count := func(name string, largest, now int, inclusive bool) {
		need := int(math.Ceil(float64(largest) * calibrateMargin))
		if inclusive {
			need = max(need, largest+1)
		}
		s := need
		switch {
		case now > 0:
			s = max(now, need)
		case largest == 0:
			// Off today and never seen: the streams give no value to
			// set it from, and the most eager setting would be a guess.
			s = 0
		case name == "cycleRepeats":
			s = max(s, 2) // 0 (off) or at least 2
		}
		sug[name] = s
		rows = append(rows, Measure{Guard: name, Today: fmt.Sprint(now), Largest: fmt.Sprint(largest), File: where[name],
			Line: whereLine[name], Suggested: fmt.Sprint(s)})
	}
	count("stepBudget", m.steps, today.StepBudget, false)
	count("identicalCalls", m.streak, today.IdenticalCalls, true)
	count("cycleRepeats", m.cycle, today.CycleRepeats, true)
	count("errorRepeats", m.errors, today.ErrorRepeats, true)
	count("silentTurns", m.silent, today.SilentTurns, false)
	count("whitespaceDeltas", m.wsDeltas, today.WhitespaceDeltas, true)
	count("whitespaceBytes", m.wsBytes, today.WhitespaceBytes, true)
	count("repeatedTextBytes", m.repeat, today.RepeatedTextBytes, true)
	dur := func(name string, largest time.Duration, now monitor.Duration) {
		need := time.Duration(math.Ceil(largest.Seconds()*calibrateMargin)) * time.Second
		s := need
		if now > 0 {
			s = max(now.D(), need)
		}
		sug[name] = goDuration(s)
		l := "-"
		if largest > 0 {
			l = largest.String()
		}
		rows = append(rows, Measure{Guard: name, Today: goDuration(now.D()), Largest: l, File: where[name], Line: whereLine[name], Suggested: goDuration(s)})
	}
	dur("stallTimeout", m.genGap, today.StallTimeout)
	dur("toolTimeout", m.toolGap, today.ToolTimeout)
	// The spend cap bounds a whole run; a turn's cost is what one stream shows.
	capNow, _ := monitor.ParseMoney(today.MaxCostUSD)
	const cent = monitor.Money(10_000_000_000)           // Money counts 1e-12 USD
	need := (m.cost + m.cost/2 + cent - 1) / cent * cent // 1.5 x, up to whole cents
	s := ""
	switch {
	case today.MaxCostUSD != "" && capNow >= need:
		s = today.MaxCostUSD
	case m.cost > 0:
		s = need.String()
	}
	if s != "" {
		sug["maxCostUSD"] = s
	}
	rows = append(rows, Measure{Guard: "maxCostUSD", Today: today.MaxCostUSD, Largest: m.cost.String(), File: where["maxCostUSD"], Suggested: s})
	return rows, sug
}

// goDuration writes a duration the way users do ("10m", not "10m0s").
func goDuration(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if len(s) < len(d.String()) {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// writeTable prints the calibration for people.
func (c Calibration) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "%d streams; every count and duration guard off while measuring.\n\n", c.Files)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "guard\ttoday\tlargest seen\twhere\tsuggested")
	for _, m := range c.Measures {
		where := m.File
		if m.Line > 0 {
			where = fmt.Sprintf("%s:%d", m.File, m.Line)
		}
		today, sug := m.Today, m.Suggested
		if today == "" || today == "0" || today == "0s" {
			today = "off"
		}
		if sug == "" {
			sug = "off"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Guard, today, m.Largest, where, sug)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(c.Trips) == 0 {
		fmt.Fprintln(w, "No stream trips or is nudged by today's guards.")
	} else {
		fmt.Fprintln(w, "Today's guards would stop or nudge:")
		for _, v := range c.Trips {
			for _, t := range v.Trips {
				fmt.Fprintf(w, "  %s:%d  %s (%s): %s\n", v.File, t.Line, t.Detector, t.Class, t.Message)
			}
			for _, n := range v.Nudges {
				fmt.Fprintf(w, "  %s:%d  nudge: %s\n", v.File, n.Line, n.Message)
			}
		}
	}
	b, err := json.MarshalIndent(c.Suggested, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nSuggested guards (--guards FILE, or the chart's guards values):\n%s\n", b)
	return nil
}
