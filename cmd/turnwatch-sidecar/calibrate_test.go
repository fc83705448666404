package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// repoStreams are the repository's own recorded streams that are healthy:
// the fake agent's healthy scenario in every format, the recorded corpus,
// and the shared corpus beside the repository when it is there.
func repoStreams(t *testing.T) []string {
	t.Helper()
	healthy, err := filepath.Glob("../../test/fakeagent/scenarios/*/healthy.log")
	if err != nil || len(healthy) != 5 {
		t.Fatalf("healthy scenarios %v %v", healthy, err)
	}
	return append(healthy, corpus)
}

// calibrate over the repository's own streams: its suggested guards are
// accepted as --guards, none of the streams trips them, and the chart
// accepts them as its guards values (values.schema.json, rendered by helm).
func TestCalibrateRepoStreams(t *testing.T) {
	paths := repoStreams(t)
	var out, errb bytes.Buffer
	if code := dispatch(append([]string{"calibrate", "--json"}, paths...), nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var c Calibration
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if c.Files < 15 || len(c.Measures) != 11 || len(c.Trips) != 0 {
		t.Fatalf("files %d measures %d trips %+v", c.Files, len(c.Measures), c.Trips)
	}
	sug, _ := json.Marshal(c.Suggested)
	dir := t.TempDir()
	guardsFile := filepath.Join(dir, "guards.json")
	if err := os.WriteFile(guardsFile, sug, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := monitor.ParseGuards(sug)
	if err != nil {
		t.Fatalf("suggested guards %s: %v", sug, err)
	}
	if g.CycleRepeats != 0 {
		t.Errorf("cycleRepeats %d: calibrate switches cycles on though no stream shows one", g.CycleRepeats)
	}
	files, _ := streamFiles(paths)
	for _, f := range files {
		out.Reset()
		errb.Reset()
		if code := dispatch([]string{"replay", "--guards", guardsFile, f}, nil, &out, &errb); code != 0 {
			t.Fatalf("replay --guards: exit %d: %s", code, errb.String())
		}
		var r monitor.Report
		json.Unmarshal(out.Bytes(), &r)
		if len(r.Trips) != 0 || len(r.Nudges) != 0 {
			t.Errorf("%s trips the suggested guards: %+v %+v", f, r.Trips, r.Nudges)
		}
	}
	values, _ := json.Marshal(map[string]any{"guards": c.Suggested})
	valuesFile := filepath.Join(dir, "values.json")
	os.WriteFile(valuesFile, values, 0o644)
	helm := exec.Command("go", "tool", "-modfile=../../hack/tools/go.mod", "helm", "template", "t", "../../charts/turnwatch", "--kube-version", "1.37.2", "-f", valuesFile)
	if b, err := helm.CombinedOutput(); err != nil {
		t.Fatalf("the chart refuses the suggested guards %s: %v\n%s", values, err, b)
	} else if !bytes.Contains(b, []byte("maxCostUSD: \""+fmt.Sprint(c.Suggested["maxCostUSD"])+"\"")) {
		t.Errorf("the rendered config does not carry the suggested maxCostUSD")
	}
}

func jsonNumber(v any) string { b, _ := json.Marshal(v); return string(b) }

// A loop among the streams: calibrate says which file today's guards stop
// and where, and suggests a guard past what it saw.
func TestCalibrateWouldTrip(t *testing.T) {
	var out, errb bytes.Buffer
	loop := "../../test/fakeagent/scenarios/claude/identicalLoop.log"
	if code := dispatch([]string{"calibrate", loop}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"identicalCalls     4      100", loop + ":", "identicalCalls (runaway): repeated an identical tool call 4 times",
		`"identicalCalls": 150`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if code := dispatch([]string{"calibrate", t.TempDir()}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no stream files") {
		t.Errorf("an empty folder: exit %d %s", code, errb.String())
	}
}

// seen is the maxima of streams that reached these values, by guard.
func seen(largest map[string]int64) maxima {
	m := newMaxima()
	maps.Copy(m.largest, largest)
	return m
}

// suggest, by itself: counts that trip when reached go past the largest
// value, counts that trip when exceeded may equal it; 1.5 x margin; never
// below today's value unless today's is off; an off guard stays off when
// the streams show none of it, else cycles at least 2.
func TestCalibrateSuggest(t *testing.T) {
	today := monitor.DefaultGuards()
	tests := []struct {
		name string
		m    maxima
		want map[string]any
	}{
		{"quiet streams keep today's guards", seen(map[string]int64{"stepBudget": 10, "identicalCalls": 2, "silentTurns": 3, "stallTimeout": int64(time.Second)}),
			map[string]any{"stepBudget": 256, "identicalCalls": 4, "silentTurns": 12, "cycleRepeats": 0, "stallTimeout": "10m"}},
		{"busy streams raise them", seen(map[string]int64{"stepBudget": 300, "identicalCalls": 4, "cycleRepeats": 3, "errorRepeats": 6, "silentTurns": 12,
			"whitespaceDeltas": 200, "whitespaceBytes": 9000, "repeatedTextBytes": 5000,
			"stallTimeout": int64(11 * time.Minute), "toolTimeout": int64(40 * time.Minute)}),
			map[string]any{"stepBudget": 450, "identicalCalls": 6, "cycleRepeats": 5, "errorRepeats": 9, "silentTurns": 18,
				"whitespaceDeltas": 300, "whitespaceBytes": 13500, "repeatedTextBytes": 7500, "stallTimeout": "16m30s", "toolTimeout": "1h"}},
		{"inclusive counts go one past", seen(map[string]int64{"identicalCalls": 1, "cycleRepeats": 2}), map[string]any{"identicalCalls": 4, "cycleRepeats": 3}},
		{"one cycle seen switches cycles on at 2", seen(map[string]int64{"cycleRepeats": 1}), map[string]any{"cycleRepeats": 2}},
		{"a cost sets a cap in whole cents", seen(map[string]int64{"maxCostUSD": int64(mustMoney("0.2001"))}), map[string]any{"maxCostUSD": "0.31"}},
		{"no cost, no cap", newMaxima(), map[string]any{"maxCostUSD": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, sug := suggest(tt.m, today, nil, nil)
			for k, v := range tt.want {
				if jsonNumber(sug[k]) != jsonNumber(v) {
					t.Errorf("%s = %v, want %v", k, sug[k], v)
				}
			}
		})
	}
}

func mustMoney(s string) monitor.Money {
	m, err := monitor.ParseMoney(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestCalibrateColumns: calibrate measures and suggests every count,
// duration and cost guard of the detector table, one row each.
func TestCalibrateColumns(t *testing.T) {
	rows, sug := suggest(newMaxima(), monitor.DefaultGuards(), nil, nil)
	var got []string
	for _, r := range rows {
		got = append(got, r.Guard)
	}
	var want []string
	for _, d := range monitor.Detectors() {
		for _, gd := range d.Guards {
			if !gd.Measured() {
				t.Errorf("detector %s: guard %s is not measured by calibrate", d.Name, gd.Name)
			}
			want = append(want, gd.Name)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calibrate's rows %v, want the detector table's guards %v", got, want)
	}
	if _, err := monitor.ParseGuards(mustJSON(t, sug)); err != nil {
		t.Errorf("the suggested guards do not parse: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An audited turn's stream, piped as `kubectl logs --timestamps POD -c
// agent | turnwatch-sidecar calibrate -` reads it (the fake agent's claude
// loop: an audited identicalCalls let it run its 100 identical calls to the
// result): the identicalCalls row shows the whole loop, and today's guards
// would stop it at its 4th call; with --audit as the turn had it, the
// stream reads on and the would-trip is listed with its count.
func TestCalibrateAuditedStream(t *testing.T) {
	stream, err := os.ReadFile("../../test/fakeagent/scenarios/claude/identicalLoop.log")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"calibrate", "-"}, []string{"identicalCalls     4      100           -:", "-:37  identicalCalls (runaway): repeated an identical tool call 4 times"}},
		{[]string{"calibrate", "--audit", "identicalCalls", "-"}, []string{"identicalCalls     4      100           -:",
			"-:37  identicalCalls (runaway, audited, 25 times): repeated an identical tool call 4 times"}},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if code := dispatch(tt.args, bytes.NewReader(stream), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errb.String())
		}
		for _, want := range tt.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: table lacks %q:\n%s", tt.args, want, out.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"calibrate", "--json", "--audit", "identicalCalls", "-"}, bytes.NewReader(stream), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var c Calibration
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Trips) != 1 || len(c.Trips[0].Trips) != 0 || len(c.Trips[0].WouldTrips) != 1 || c.Trips[0].WouldTrips[0].Detector != "identicalCalls" ||
		c.Trips[0].WouldTrips[0].Count != 25 {
		t.Errorf("wouldTrip %+v", c.Trips)
	}
	if code := dispatch([]string{"calibrate", "--audit", "loops", "-"}, bytes.NewReader(stream), &out, &errb); code != 2 || !strings.Contains(errb.String(), `"loops"`) {
		t.Errorf("an unknown audited detector: exit %d %s", code, errb.String())
	}
}
