package main

import (
	"bytes"
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
	// WouldTrips are the trips of the detectors --audit names: the stream
	// is read on past them, as an audited turn ran on.
	WouldTrips []monitor.WouldTrip `json:"wouldTrips,omitempty"`
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

// stdinName is the PATH that names calibrate's standard input: one stream,
// such as an agent's log piped from kubectl.
const stdinName = "-"

// runCalibrate: calibrate [--format FORMAT] [--guards FILE] [--audit DETECTORS] [--json] PATH...|-
func runCalibrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var ef engineFlags
	ef.register(fset)
	asJSON := fset.Bool("json", false, "print JSON for tools instead of the table")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: turnwatch-sidecar calibrate [--format FORMAT] [--guards FILE] [--audit DETECTORS] [--json] PATH...|-")
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
	var piped []byte // read once: each stream is read twice
	if slices.Contains(files, stdinName) {
		if piped, err = io.ReadAll(stdin); err != nil {
			fmt.Fprintln(stderr, "calibrate: reading the standard input:", err)
			return 1
		}
	}
	c, err := calibrate(files, piped, opts, ef.maxLine)
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
		if p == stdinName {
			out = append(out, p)
			continue
		}
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

// maxima are the largest values one stream (or all) reached, by guard
// name, as the detector table's guards measure them: counts, silences in
// nanoseconds, the cost in Money.
type maxima struct {
	largest map[string]int64
	at      map[string]int // the line that reached each (0: the whole file)
}

func newMaxima() maxima { return maxima{largest: map[string]int64{}, at: map[string]int{}} }

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
	m := newMaxima()
	var before monitor.State
	loop := monitor.Loop{
		Before: func() { before = eng.State() },
		After: func(monitor.Fed) {
			after := eng.State()
			m.fold(&before, &after, eng.Lines(), false)
		},
	}
	if err := loop.Run(eng, monitor.NewLineReader(in, maxLine)); err != nil {
		return maxima{}, err
	}
	eng.Finish()
	st := eng.State()
	m.fold(&st, &st, 0, true)
	return m, nil
}

// fold keeps the largest value of each guard measured line by line (or,
// with wholeTurn, of each measured once at the end of the turn).
func (m *maxima) fold(before, after *monitor.State, line int, wholeTurn bool) {
	for _, gd := range monitor.AllGuards() {
		if gd.WholeTurn != wholeTurn {
			continue
		}
		if v, ok := gd.Measure(before, after); ok && (v > m.largest[gd.Name] || wholeTurn) {
			m.largest[gd.Name], m.at[gd.Name] = v, line
		}
	}
}

// calibrate measures every file (stdinName: the piped bytes), replays it
// with today's guards, and suggests guards.
func calibrate(files []string, piped []byte, opts monitor.Options, maxLine int) (Calibration, error) {
	c := Calibration{Files: len(files), Trips: []FileVerdict{}}
	all := newMaxima()
	where := map[string]string{}
	for _, f := range files {
		m, err := measureFile(f, piped, opts, maxLine)
		if err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		for name, v := range m.largest {
			if v > all.largest[name] {
				all.largest[name], all.at[name], where[name] = v, m.at[name], f
			}
		}

		v, err := verdictFile(f, piped, opts, maxLine)
		if err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		if len(v.Trips) > 0 || len(v.Nudges) > 0 || len(v.WouldTrips) > 0 {
			c.Trips = append(c.Trips, v)
		}
	}
	c.Measures, c.Suggested = suggest(all, opts.Guards, where, all.at)
	return c, nil
}

// openStream opens a stream file, or for stdinName the piped bytes.
func openStream(name string, piped []byte) (io.ReadCloser, error) {
	if name == stdinName {
		return io.NopCloser(bytes.NewReader(piped)), nil
	}
	return os.Open(name)
}

func measureFile(name string, piped []byte, opts monitor.Options, maxLine int) (maxima, error) {
	f, err := openStream(name, piped)
	if err != nil {
		return maxima{}, err
	}
	defer f.Close()
	return measure(f, opts, maxLine)
}

func verdictFile(name string, piped []byte, opts monitor.Options, maxLine int) (FileVerdict, error) {
	f, err := openStream(name, piped)
	if err != nil {
		return FileVerdict{}, err
	}
	defer f.Close()
	r, err := replay(f, opts, maxLine)
	if err != nil {
		return FileVerdict{}, err
	}
	return FileVerdict{File: name, Format: r.Format, Trips: r.Trips, Nudges: r.Nudges, WouldTrips: r.WouldTrips}, nil
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
	count := func(gd monitor.Guard, largest, now int) {
		name := gd.Name
		need := int(math.Ceil(float64(largest) * calibrateMargin))
		if gd.TripsAtLimit {
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
		case gd.Least > 1:
			s = max(s, gd.Least) // 0 (off) or at least Least
		}
		sug[name] = s
		rows = append(rows, Measure{Guard: name, Today: fmt.Sprint(now), Largest: fmt.Sprint(largest), File: where[name],
			Line: whereLine[name], Suggested: fmt.Sprint(s)})
	}
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
	for _, gd := range monitor.AllGuards() {
		if !gd.Measured() {
			continue
		}
		largest := m.largest[gd.Name]
		switch gd.Kind {
		case monitor.GuardCount:
			count(gd, int(largest), gd.Value(today).(int))
		case monitor.GuardDuration:
			dur(gd.Name, time.Duration(largest), gd.Value(today).(monitor.Duration))
		case monitor.GuardCost:
			rows = append(rows, suggestCap(gd.Name, monitor.Money(largest), today.MaxCostUSD, where, sug))
		}
	}
	return rows, sug
}

// suggestCap suggests the spend cap. It bounds a whole run; a turn's cost is
// what one stream shows.
func suggestCap(name string, cost monitor.Money, today string, where map[string]string, sug map[string]any) Measure {
	capNow, _ := monitor.ParseMoney(today)
	const cent = monitor.Money(10_000_000_000)       // Money counts 1e-12 USD
	need := (cost + cost/2 + cent - 1) / cent * cent // 1.5 x, up to whole cents
	s := ""
	switch {
	case today != "" && capNow >= need:
		s = today
	case cost > 0:
		s = need.String()
	}
	if s != "" {
		sug[name] = s
	}
	return Measure{Guard: name, Today: today, Largest: cost.String(), File: where[name], Suggested: s}
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
			for _, x := range v.WouldTrips {
				fmt.Fprintf(w, "  %s:%d  %s (%s, audited, %d times): %s\n", v.File, x.Line, x.Detector, x.Class, x.Count, x.Message)
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
