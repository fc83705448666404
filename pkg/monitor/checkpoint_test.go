package monitor

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Restarting from a checkpoint after any line, fed only the lines after it
// (the ones before are gone: a rotated log), gives the report of an
// uninterrupted run: every corpus stream, every cut point, with timestamps
// so the stall clock crosses the cut.
func TestCheckpointRestoreEveryCut(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*/*")
	files = append(files, "") // plus a synthetic loop that trips
	tripped := 0
	defer func() {
		if tripped < 5 {
			t.Errorf("only %d streams tripped: the test does not cross a trip", tripped)
		}
	}()
	for _, f := range files {
		var lines []string
		format := FormatAuto
		if f == "" {
			var s stream
			for range 6 {
				s.claudeToolOnly("Bash", map[string]any{"command": "ls"}, false)
			}
			lines, format, f = s.lines, FormatClaude, "loop"
		} else {
			if strings.HasSuffix(f, ".md") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines = strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		}
		t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		for i := range lines {
			at := t0.Add(time.Duration(i) * time.Minute)
			if i >= len(lines)*2/3 { // a silence in the last third: tools outstanding or not, it trips
				at = at.Add(time.Hour)
			}
			lines[i] = at.Format(time.RFC3339Nano) + " " + lines[i]
		}
		g := DefaultGuards()
		g.StallTimeout = Duration(3 * time.Minute / 2)
		opts := Options{Format: format, Guards: g, PriorCostUSD: "0.5"}
		want := feedReport(t, opts, nil, lines)
		if len(want.Trips) > 0 {
			tripped++
		}
		for cut := 0; cut <= len(lines); cut++ {
			first, _ := New(opts)
			for _, l := range lines[:cut] {
				first.Feed([]byte(l), time.Time{})
			}
			cp, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if got := feedReport(t, opts, cp, lines[cut:]); js(got) != js(want) {
				t.Fatalf("%s cut at %d:\n got %s\nwant %s", f, cut, js(got), js(want))
			}
		}
	}
}

func feedReport(t *testing.T, opts Options, cp []byte, lines []string) Report {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cp != nil {
		if err := e.Restore(cp); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range lines {
		e.Feed([]byte(l), time.Time{})
	}
	e.Finish()
	return e.Report()
}

// A checkpoint an older sidecar wrote (version 2: the fold copied field by
// field) is refused, so the sidecar replays the log as it does without one.
func TestCheckpointOlderVersionRefused(t *testing.T) {
	type msgSnapshot struct {
		Open   bool
		Calls  int
		Model  []byte
		Deltas bool
	}
	old := struct {
		Version        int
		Format, Active string
		St             State
		Lines, Anon    int
		Msg            msgSnapshot
		ErrNote        []byte
	}{Version: 2, Format: FormatPi, Active: FormatPi, St: State{Steps: 3}, Lines: 7, Msg: msgSnapshot{Open: true, Calls: 1, Model: []byte("m")}}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&old); err != nil {
		t.Fatal(err)
	}
	e, _ := New(Options{Format: FormatPi})
	if err := e.Restore(b.Bytes()); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("restored a version-2 checkpoint: %v", err)
	}
	if r := e.Report(); r.Lines != 0 || r.Steps != 0 {
		t.Fatalf("a refused checkpoint left %+v", r)
	}
}

func TestCheckpointRefused(t *testing.T) {
	a, _ := New(Options{Format: FormatPi})
	cp, _ := a.Checkpoint()
	b, _ := New(Options{Format: FormatClaude})
	if err := b.Restore(cp); err == nil {
		t.Error("a pi checkpoint restored into a claude engine")
	}
	c, _ := New(Options{Format: FormatPi})
	if err := c.Restore([]byte("garbage")); err == nil {
		t.Error("garbage restored")
	}
}

// The checkpoint holds the fold whole: Engine keeps outside State and
// foldState only what New derives from Options, per-line scratch, and what
// Restore derives from the fold (a field added to Engine must be one of
// those, or go into foldState); and every field the snapshot reaches
// encodes (exported, or a type that encodes itself), else gob drops it and
// a restored engine silently differs.
func TestCheckpointCoversTheEngine(t *testing.T) {
	outside := []string{"opts", "format", "parse", "prices", "world", "audit", "st", "f", "ev", "sc", "obj", "canon", "pi", "pc", "cur",
		"side", "esc", "wouldCount", "priceCache"}
	var got []string
	for f := range reflect.TypeFor[Engine]().Fields() {
		got = append(got, f.Name)
	}
	if !reflect.DeepEqual(got, outside) {
		t.Errorf("Engine has fields %v; want %v: put the fold's in foldState", got, outside)
	}
	seen := map[reflect.Type]bool{}
	paths := unencoded(reflect.TypeFor[snapshot](), "snapshot", seen)
	paths = append(paths, unencoded(reflect.TypeFor[parked](), "agentSlots[]", seen)...) // agentSlots encodes these
	for _, path := range paths {
		t.Errorf("%s does not encode: export it (or give its type MarshalBinary)", path)
	}
}

// unencoded lists the fields under typ that gob would drop.
func unencoded(typ reflect.Type, path string, seen map[reflect.Type]bool) []string {
	if seen[typ] || typ.Implements(reflect.TypeFor[encoding.BinaryMarshaler]()) {
		return nil
	}
	seen[typ] = true
	switch typ.Kind() {
	case reflect.Array, reflect.Slice, reflect.Pointer:
		return unencoded(typ.Elem(), path+"[]", seen)
	case reflect.Map:
		return append(unencoded(typ.Key(), path+"[key]", seen), unencoded(typ.Elem(), path+"[]", seen)...)
	case reflect.Struct:
	default:
		return nil
	}
	if typ == reflect.TypeFor[time.Time]() {
		return nil
	}
	var out []string
	for f := range typ.Fields() {
		if !f.IsExported() {
			out = append(out, path+"."+f.Name)
			continue
		}
		out = append(out, unencoded(f.Type, path+"."+f.Name, seen)...)
	}
	return out
}

// The checkpoint stays small however long the stream: the call set is
// bounded, nothing else grows with the lines (docs/protocol.md gives the
// figure).
func TestCheckpointSizeBounded(t *testing.T) {
	e, _ := New(Options{Format: FormatClaude, Guards: guards(func(g *Guards) { g.StepBudget = 0 })})
	var s stream
	for i := range 10000 {
		s.claudeToolOnly("Bash", map[string]any{"command": i}, false)
	}
	for _, l := range s.lines {
		e.Feed([]byte(l), time.Time{})
	}
	cp, err := e.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checkpoint after %d lines, %d steps: %d bytes", len(s.lines), e.State().Steps, len(cp))
	if len(cp) > 256<<10 {
		t.Errorf("checkpoint of %d bytes", len(cp))
	}
}

// The parked agents survive a checkpoint: A's streak, hidden among B's
// calls, trips on the same line whatever line the sidecar restarted after.
func TestCheckpointSubagentsEveryCut(t *testing.T) {
	s := &stream{}
	s.add(cInit())
	for i := range 4 {
		for _, a := range []string{"A", "B", ""} {
			arg := fmt.Sprint(a, i)
			if a == "A" {
				arg = "x"
			}
			id := s.id("toolu")
			s.add(cSub(a, s.id("msg"), id, "Grep", map[string]any{"q": arg}), cSubResult(a, id, "found "+arg, false))
		}
	}
	opts := Options{Format: FormatClaude}
	want := feedReport(t, opts, nil, s.lines)
	if len(want.Trips) != 1 || want.Trips[0].Detector != DetectorIdenticalCalls {
		t.Fatalf("trips %s, want A's identical calls", js(want.Trips))
	}
	for cut := range s.lines {
		first, _ := New(opts)
		for _, l := range s.lines[:cut] {
			first.Feed([]byte(l), time.Time{})
		}
		cp, err := first.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if got := feedReport(t, opts, cp, s.lines[cut:]); js(got) != js(want) {
			t.Fatalf("cut at %d:\n got %s\nwant %s", cut, js(got), js(want))
		}
	}
}

// turnOp is one thing the sidecar feeds: a stdout line, or a model event.
type turnOp struct {
	line  string
	model *ModelEvent
}

// modelTurn is a scripted turn as the sidecar feeds it: each answer's
// model events, then what the CLI printed of it.
func modelTurn(msgs []scriptedMsg, lines [][]string) []turnOp {
	var ops []turnOp
	add := func(ls []string) {
		for _, l := range ls {
			ops = append(ops, turnOp{line: l})
		}
	}
	add(lines[0])
	for i, m := range msgs {
		for j := range m.events {
			ops = append(ops, turnOp{model: &m.events[j]})
		}
		add(lines[i+1])
	}
	add(lines[len(lines)-1])
	return ops
}

func feedOps(e *Engine, ops []turnOp) {
	for _, op := range ops {
		if op.model != nil {
			e.FeedModel(*op.model, time.Time{})
		} else {
			e.Feed([]byte(op.line), time.Time{})
		}
	}
}

// Restarting from a checkpoint between any two things fed, model events
// too, gives the report of an uninterrupted run: the metered cost, the
// stream's figure, the model's stop and its repeated text cross the cut.
func TestCheckpointModelSideEveryCut(t *testing.T) {
	for _, c := range []struct{ format, scenario, budget, trip string }{
		{FormatCodex, "healthy", "", ""},
		{FormatOpencode, "repetition", "", DetectorRepetition},
		{FormatGemini, "lengthStop", "", DetectorLengthStop},
		{FormatClaude, "overspend", "1.00", DetectorBudget},
	} {
		msgs := playScripted(t, c.scenario, modelOf[c.format], `{"repeatedTextBytes": 600}`)
		ops := modelTurn(msgs, printed(c.format, msgs, 0.001))
		opts := Options{Format: c.format, Metered: true, BudgetLeftUSD: c.budget, Guards: mustGuards(t, `{"repeatedTextBytes": 600}`)}
		whole, _ := New(opts)
		feedOps(whole, ops)
		whole.Finish()
		want := whole.Report()
		if tripOf(want) != c.trip {
			t.Fatalf("%s/%s: trips %s, want %q", c.format, c.scenario, js(want.Trips), c.trip)
		}
		for cut := 0; cut <= len(ops); cut++ {
			first, _ := New(opts)
			feedOps(first, ops[:cut])
			cp, err := first.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			e, _ := New(opts)
			if err := e.Restore(cp); err != nil {
				t.Fatal(err)
			}
			feedOps(e, ops[cut:])
			e.Finish()
			if got := e.Report(); js(got) != js(want) {
				t.Fatalf("%s/%s cut at %d:\n got %s\nwant %s", c.format, c.scenario, cut, js(got), js(want))
			}
		}
	}
}

// A version 3 checkpoint (before the model's side) is read: its turn had
// nothing metered and no model stop, which its missing fields decode as.
func TestCheckpointVersion3Read(t *testing.T) {
	var s stream
	s.claudeToolOnly("Bash", map[string]any{"command": "ls"}, false)
	a, _ := New(Options{Format: FormatClaude})
	for _, l := range s.lines {
		a.Feed([]byte(l), time.Time{})
	}
	cp, _ := a.Checkpoint()
	var snap snapshot
	if err := gob.NewDecoder(bytes.NewReader(cp)).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	snap.Version = 3
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&snap); err != nil {
		t.Fatal(err)
	}
	e, _ := New(Options{Format: FormatClaude})
	if err := e.Restore(b.Bytes()); err != nil {
		t.Fatalf("a version 3 checkpoint: %v", err)
	}
	if js(e.Report()) != js(a.Report()) {
		t.Errorf("restored %s, want %s", js(e.Report()), js(a.Report()))
	}
}
